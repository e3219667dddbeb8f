import { isAbsolute, posix, relative, sep } from 'node:path';

/**
 * The compiler's errors behind a failed import of an app's module, for a person: file (relative to the
 * repository), line, column and esbuild's own message. tsx compiles the app with esbuild, whose errors carry
 * `errors[].location`; through Node's loader thread only the message survives (`Transform failed with 1 error:`
 * then one `<file>:<line>:<col>: ERROR: <text>` line per error), so both forms are read. The first line alone says
 * nothing a user can act on.
 */
export interface CompileError {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/** At most this many errors are told (esbuild stops at a handful anyway). */
export const MAX_COMPILE_ERRORS = 3;
const ERROR_LINE = /^(.+?):(\d+):(\d+): ERROR: (.+)$/;

/**
 * The compile errors in `err` or its causes; none when it is not a compile error. `appDir` is where the app config
 * sits, `prefix` its folder inside the repository ('' at the root): paths are shown from the repository's root, and
 * a file outside the repository by its name only (where the host keeps things is not the user's business).
 */
export function compileErrors(err: unknown, appDir: string, prefix = ''): CompileError[] {
  const found: CompileError[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const structured = (e as { errors?: unknown }).errors;
    if (Array.isArray(structured)) {
      for (const item of structured) {
        const loc = (item as { location?: Record<string, unknown> | null })?.location;
        const text = (item as { text?: unknown })?.text;
        if (loc && typeof loc.file === 'string' && typeof text === 'string')
          found.push({ file: loc.file, line: Number(loc.line), column: Number(loc.column), text });
      }
    }
    if (found.length === 0) {
      for (const line of e.message.split(/\r?\n/)) {
        const m = ERROR_LINE.exec(line.trim());
        if (m) found.push({ file: m[1]!, line: Number(m[2]), column: Number(m[3]), text: m[4]! });
      }
    }
    if (found.length > 0) break;
  }
  return found.slice(0, MAX_COMPILE_ERRORS).map((c) => ({
    ...c,
    file: shownPath(c.file, appDir, prefix),
    text: c.text.slice(0, 300),
  }));
}

/** `graph.ts:45:56: Expected ";" but found "{"`, several joined with `; `. */
export function describeCompileErrors(errors: readonly CompileError[]): string {
  return errors.map((e) => `${e.file}:${e.line}:${e.column}: ${e.text}`).join('; ');
}

function shownPath(file: string, appDir: string, prefix: string): string {
  const path = file.startsWith('file://') ? new URL(file).pathname : file;
  const rel = (isAbsolute(path) ? relative(appDir, path) : path).split(sep).join('/');
  const inRepo = posix.normalize(posix.join(prefix, rel));
  if (rel === '' || posix.isAbsolute(rel) || inRepo === '..' || inRepo.startsWith('../'))
    return posix.basename(path.split(sep).join('/'));
  return inRepo;
}
