import type { Logger } from 'pino';

/** Exit code after an uncaught exception (EX_SOFTWARE): the process's state is unknown, its supervisor restarts it. */
export const UNCAUGHT_EXIT_CODE = 70;

/** What the guards listen on and how they end the process (a test passes its own). */
export interface GuardedProcess {
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  on(event: 'uncaughtException', listener: (err: Error) => void): unknown;
  exit(code: number): never | void;
}

/**
 * The process-level policy for the unexpected, installed by each program's entry point (`gateway start`, the
 * services' standalone mains), never by a library:
 * - an unhandled rejection is a bug in a promise chain whose work has already failed on its own; it is logged as
 *   fatal with its stack and the process keeps serving (one bad request must not end every connection);
 * - an uncaught exception was thrown from a callback with the stack unwound past code that may hold state half
 *   changed; it is logged as fatal with its stack, then the process exits with UNCAUGHT_EXIT_CODE for the
 *   supervisor to restart it.
 */
export function installProcessGuards(log: Logger, proc: GuardedProcess = process): void {
  proc.on('unhandledRejection', (reason) => {
    log.fatal({ err: describe(reason) }, 'unhandled promise rejection (kept serving)');
  });
  proc.on('uncaughtException', (err) => {
    log.fatal({ err: describe(err), exitCode: UNCAUGHT_EXIT_CODE }, 'uncaught exception: exiting');
    log.flush();
    proc.exit(UNCAUGHT_EXIT_CODE);
  });
}

function describe(reason: unknown): { type: string; message: string; stack?: string } {
  if (reason instanceof Error) return { type: reason.name, message: reason.message, stack: reason.stack };
  return { type: typeof reason, message: String(reason) };
}
