import { dirname, resolve } from 'node:path';

/**
 * Where a syntax error of an app's plain JavaScript is. Node's own SyntaxError for an ES module says only what
 * (`Unexpected identifier 'd'`), and the module lexer tsx runs first says only `Parse error <file>:1:1`; TypeScript
 * graphs fail through esbuild with file, line, column and message (revision-host/compile-errors.ts). To tell both
 * the same way, the module that failed is parsed again by esbuild, with the app's own files it imports (packages left
 * out): its errors, with their locations, are what the failure then carries (as `errors`, esbuild's form).
 */

/** Whether `err` is a syntax error that does not say where (Node's, or tsx's lexer's `Parse error`). */
export function isUnlocatedSyntaxError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if ((err as { errors?: unknown }).errors !== undefined) return false; // esbuild's: it says where
  return err.name === 'SyntaxError' || err.message.startsWith('Parse error ');
}

/**
 * esbuild's syntax errors in `file` and the app files it imports, with absolute paths; null when esbuild finds none
 * (the error is one esbuild does not see, or lies elsewhere).
 */
export async function locateSyntaxErrors(file: string): Promise<Error | null> {
  const workDir = dirname(file);
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    return null;
  }
  try {
    await esbuild.build({
      entryPoints: [file],
      absWorkingDir: workDir,
      bundle: true,
      packages: 'external',
      write: false,
      logLevel: 'silent',
      platform: 'node',
      format: 'esm',
    });
    return null;
  } catch (failure) {
    const errors = ((failure as { errors?: unknown }).errors ?? []) as {
      text: string;
      location: { file: string; line: number; column: number } | null;
    }[];
    // Only what the parser says: a path it could not resolve is not the error Node met.
    const located = errors
      .filter((e) => e.location !== null && !e.text.startsWith('Could not resolve'))
      .map((e) => ({ text: e.text, location: { ...e.location!, file: resolve(workDir, e.location!.file) } }));
    if (located.length === 0) return null;
    return Object.assign(new Error(`Syntax error: ${located[0]!.text}`), { errors: located });
  }
}
