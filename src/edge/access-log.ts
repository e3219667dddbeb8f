import pino, { type Logger } from 'pino';

/** What one request's log line says. None of it is a credential or an identity. */
export interface AccessEntry {
  readonly requestId: string;
  readonly method: string;
  readonly path: string;
  readonly rule: string | undefined;
  readonly decision: string;
  readonly fellBack: boolean;
  readonly status: number;
  readonly upstream: string | undefined;
  readonly ms: number;
}

type Destination = { write(line: string): unknown };

/**
 * The request log: one pino-format JSON line per request (`"level":30`,
 * `"time"`, the logger's bindings, `"msg":"request"`), written to the
 * logger's own destination. The line is assembled here rather than by
 * `logger.info(object)`: on the path of every request, pino's generic
 * serialiser (and a redaction pass) is most of what logging costs, and
 * these fields need neither. Strings that come from the client (the path)
 * are JSON-escaped; the rest are ids from the rule file, fixed words, or a
 * request id that passed its pattern.
 */
export function accessLog(log: Logger): (entry: AccessEntry) => void {
  if (!log.isLevelEnabled('info')) return () => {};
  const destination = (log as unknown as Record<symbol, Destination>)[pino.symbols.streamSym]!;
  const chindings = (log as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? '';
  return (e) => {
    let line = `{"level":30,"time":${Date.now()}${chindings},"requestId":"${e.requestId}","method":"${e.method}","path":${JSON.stringify(e.path)}`;
    if (e.rule !== undefined) line += `,"rule":${JSON.stringify(e.rule)}`;
    line += `,"decision":"${e.decision}"`;
    if (e.fellBack) line += ',"fellBack":true';
    line += `,"status":${e.status}`;
    if (e.upstream !== undefined) line += `,"upstream":"${e.upstream}"`;
    destination.write(`${line},"ms":${e.ms},"msg":"request"}\n`);
  };
}
