// Type-aware lint for the bug class a Node server dies of: promises. The three required rules catch a promise
// nobody awaits or catches (no-floating-promises), a promise handed to a caller that ignores it, such as an event
// listener or a `void` callback (no-misused-promises), and an `await` on something that is never a promise, the
// sign of a call left out (await-thenable). Mixed arrays in Promise.all (a promise or undefined when there is
// nothing to wait for) are the idiom here and are correct, so await-thenable allows them.
// Also on, being cheap and finding little here: return-await 'in-try-catch' (a `return promise` inside try
// skips the catch and the finally runs too early), only-throw-error and prefer-promise-reject-errors (a thrown or
// rejected non-Error has no stack), no-unnecessary-type-assertion (a cast that no longer does anything hides the
// one that does).
// Not the whole recommendedTypeChecked: it reports about 1,200 no-unsafe-* and 600 restrict-template-expressions
// findings, nearly all on parsed JSON and in tests, in code that is fine. Not require-await (90 findings): dropping
// `async` from a function without an await turns its rejections into synchronous throws.
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(globalIgnores(['bench/results/', 'dist/', 'coverage/']), {
  files: ['src/**/*.{ts,mjs}', 'test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts', 'bin/**/*.js', '*.ts'],
  languageOptions: {
    parser: tseslint.parser,
    parserOptions: {
      // The JavaScript files (the `gateway` program, a module hook, the schema parser's child) are outside tsconfig.json.
      projectService: {
        allowDefaultProject: [
          'bin/*.js',
          'src/services/revision-host/*.mjs',
          'src/services/agent-server/api/assistants/*.mjs',
        ],
      },
      tsconfigRootDir: import.meta.dirname,
    },
  },
  plugins: { '@typescript-eslint': tseslint.plugin },
  linterOptions: { reportUnusedDisableDirectives: 'error' },
  rules: {
    '@typescript-eslint/no-floating-promises': 'error',
    '@typescript-eslint/no-misused-promises': 'error',
    '@typescript-eslint/await-thenable': ['error', { allowMixedPromiseArrays: true }],
    '@typescript-eslint/return-await': ['error', 'in-try-catch'],
    '@typescript-eslint/only-throw-error': 'error',
    // As only-throw-error by default: handing on a caught `unknown` is rethrowing it, not making a new non-Error.
    '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    '@typescript-eslint/no-unnecessary-type-assertion': 'error',
  },
});
