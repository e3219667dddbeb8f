/** Where a command writes: stdout for its answer, stderr for trouble. Injected so tests read both. */
export interface Output {
  log(line: string): void;
  err(line: string): void;
}

export const consoleOutput: Output = {
  log: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/**
 * A reader that went away (`gateway explain … | head -1`) wants no more of the answer: exit quietly, as a program
 * ended by SIGPIPE would, rather than die of an unhandled 'error' event with a stack trace. Not for `gateway start`:
 * a server whose log pipe closed is an operator's problem, reported as such.
 */
export function exitQuietlyOnClosedPipe(
  stream: NodeJS.WriteStream = process.stdout,
  exit: (code: number) => void = process.exit,
): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    exit(0);
  });
}
