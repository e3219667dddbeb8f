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

/** `gateway start` whose stdout went away: EX_IOERR. */
export const LOST_STDOUT_EXIT_CODE = 74;

export interface ErrorSource {
  on(event: 'error', listener: (err: NodeJS.ErrnoException) => void): unknown;
}

/**
 * For `gateway start`: a server whose stdout (its log, the development key's banner) was closed (`gateway start |
 * head`, a collector that died) can tell nobody anything any more. It says so in one line on stderr and exits
 * LOST_STDOUT_EXIT_CODE for its supervisor, instead of dying of an unhandled 'error' event (a stack trace, exit 70) or
 * serving blind (or hanging at exit). `streams`: stdout and the logger's destination (pino writes to fd 1 through
 * its own stream); `silence` stops the logger writing (log.ts, silenceLogger).
 */
export function exitWhenStdoutIsLost(
  streams: readonly (ErrorSource | undefined)[],
  silence: () => void,
  err: (line: string) => void = (line) => process.stderr.write(line + '\n'),
  exit: (code: number) => void = process.exit,
): void {
  let done = false;
  for (const stream of streams) {
    stream?.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'EBADF') throw e;
      if (done) return;
      done = true;
      silence();
      err(
        `gateway start: stdout is closed (${e.code}): the log has nowhere to go; stopping (exit ${LOST_STDOUT_EXIT_CODE})`,
      );
      exit(LOST_STDOUT_EXIT_CODE);
    });
  }
}
