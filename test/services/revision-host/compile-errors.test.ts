import { describe, expect, it } from 'vitest';
import { compileErrors, describeCompileErrors } from '../../../src/services/revision-host/compile-errors.ts';

/** What a failed import of an app's module tells about the compiler's errors (issue 28, item 2). */
describe('compile errors', () => {
  it('esbuild errors with a location (errors[].location): repository paths, at most three', () => {
    const err = Object.assign(new Error('Build failed with 4 errors'), {
      errors: [1, 2, 3, 4].map((n) => ({
        text: `problem ${n}`,
        location: { file: `/builds/us/d/r/apps/x/src/g${n}.ts`, line: n, column: n * 2 },
      })),
    });
    const found = compileErrors(err, '/builds/us/d/r/apps/x', 'apps/x');
    expect(describeCompileErrors(found)).toBe(
      'apps/x/src/g1.ts:1:2: problem 1; apps/x/src/g2.ts:2:4: problem 2; apps/x/src/g3.ts:3:6: problem 3',
    );
  });

  it('the message form, as it crosses the loader thread, found through `cause`', () => {
    const cause = new Error(
      'Transform failed with 1 error:\n/app/dir/graph.ts:45:56: ERROR: Expected ";" but found "{"',
    );
    const err = new Error('graphs.agent: Transform failed with 1 error:', { cause });
    expect(compileErrors(err, '/app/dir')).toEqual([
      { file: 'graph.ts', line: 45, column: 56, text: 'Expected ";" but found "{"' },
    ]);
  });

  it('a file outside the repository shows by its name only; no compile error, nothing', () => {
    const err = new Error('Transform failed with 1 error:\n/usr/lib/node_modules/x/index.ts:1:2: ERROR: bad');
    expect(compileErrors(err, '/app/dir')[0]!.file).toBe('index.ts');
    expect(compileErrors(new Error("Cannot find module 'left-pad'"), '/app/dir')).toEqual([]);
  });
});
