import type { Logger } from 'pino';

/**
 * The logger app code reaches with `getLogger()` of `@langchain/langgraph-sdk/logging`, as the official server
 * registers it: on `globalThis[Symbol.for('langgraph.api.sdk-logger')]`, before any module of the app loads (so a
 * graph may take it at import). It has the shape of the official one (winston's leveled methods: `error`, `warn`,
 * `info`, `debug`, …, each `(message, ...meta)` or `(object)`, chainable) and writes to the server's log, tagged
 * `source: "app"`, with the node that logs (`langgraph_node`) when called inside a run.
 */
export const SDK_LOGGER = Symbol.for('langgraph.api.sdk-logger');

type Level = 'error' | 'warn' | 'info' | 'debug' | 'trace';
/** winston's levels, onto pino's. */
const LEVELS: Readonly<Record<string, Level>> = {
  error: 'error',
  warn: 'warn',
  help: 'info',
  data: 'info',
  info: 'info',
  prompt: 'info',
  input: 'info',
  http: 'debug',
  verbose: 'debug',
  debug: 'debug',
  silly: 'trace',
};

export type SdkLogMethod = (message: unknown, ...meta: unknown[]) => SdkLogger;
export type SdkLogger = { [level in keyof typeof LEVELS]: SdkLogMethod } & {
  log(level: string, message: unknown, ...meta: unknown[]): SdkLogger;
  child(meta: Record<string, unknown>): SdkLogger;
};

/** A winston-shaped logger over `log`; `node()` names the node running the caller, if any. */
export function sdkLogger(log: Logger, node: () => string | undefined = () => undefined): SdkLogger {
  const write = (level: string, message: unknown, meta: unknown[]) => {
    const fields: Record<string, unknown> = {};
    let text: string | undefined;
    for (const part of [message, ...meta]) {
      if (part instanceof Error) fields.err = { type: part.name, message: part.message, stack: part.stack };
      else if (typeof part === 'object' && part !== null) Object.assign(fields, part);
      else if (part !== undefined) text = text === undefined ? String(part) : `${text} ${String(part)}`;
    }
    if (text === undefined && typeof fields.message === 'string') {
      text = fields.message;
      delete fields.message;
    }
    const current = node();
    if (current !== undefined && fields.langgraph_node === undefined) fields.langgraph_node = current;
    log[LEVELS[level] ?? 'info'](fields, text ?? '');
  };
  const methods: Record<string, unknown> = {};
  const logger = methods as unknown as SdkLogger;
  for (const level of Object.keys(LEVELS)) {
    methods[level] = (message: unknown, ...meta: unknown[]) => (write(level, message, meta), logger);
  }
  methods.log = (level: string, message: unknown, ...meta: unknown[]) => (write(level, message, meta), logger);
  methods.child = (meta: Record<string, unknown>) => sdkLogger(log.child(meta), node);
  return logger;
}

/** Registers the app's logger for `getLogger()` (the last server created in a process wins: one app per process). */
export function registerSdkLogger(log: Logger, node?: () => string | undefined): SdkLogger {
  const logger = sdkLogger(log.child({ source: 'app' }), node);
  (globalThis as Record<symbol, unknown>)[SDK_LOGGER] = logger;
  return logger;
}
