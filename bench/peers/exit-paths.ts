/**
 * How a benchmark ends early without leaving anything behind: `abort` prints
 * why, runs the cleanup (children stopped, Redis keys deleted) and exits with
 * `code`; Ctrl-C and running past `budgetMs` abort the same way.
 */
export function exitPaths(cleanup: () => Promise<unknown>, budgetMs: number, what = 'the run') {
  async function abort(message: string, code = 1): Promise<never> {
    console.error(message);
    await cleanup().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
    process.exit(code);
  }
  process.once('SIGINT', () => void abort('interrupted: children stopped, Redis keys deleted', 130));
  setTimeout(
    () => void abort(`FAIL ${what} took longer than ${Math.round(budgetMs / 1000)} s: stopped`),
    budgetMs,
  ).unref();
  return abort;
}
