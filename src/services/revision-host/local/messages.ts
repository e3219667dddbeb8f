import type { FromChild } from './protocol.ts';

/**
 * A message from a revision's process, checked before the gateway looks at
 * it: app code shares that process and can `process.send` anything (null, a
 * string, a `ready` with a URL of its choice). Anything not of a known shape,
 * within its sizes, is null: the caller logs it and ignores it.
 */
const MAX_GRAPHS = 1000;
const MAX_TEXT = 1000;
const MAX_KEY = 4096;

export function parseFromChild(m: unknown): FromChild | null {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) return null;
  const o = m as Record<string, unknown>;
  switch (o.type) {
    case 'ready':
      // Any `url` it adds is ignored: the target is the port the host chose.
      if (!Array.isArray(o.graphs) || o.graphs.length > MAX_GRAPHS || !o.graphs.every((g) => isText(g, MAX_TEXT)))
        return null;
      return { type: 'ready', graphs: o.graphs };
    case 'failed':
      return typeof o.reason === 'string' ? { type: 'failed', reason: o.reason.slice(0, MAX_TEXT) } : null;
    case 'verify':
      if (!Number.isSafeInteger(o.id) || !isText(o.key, MAX_KEY)) return null;
      return { type: 'verify', id: o.id as number, key: o.key };
    default:
      return null;
  }
}

function isText(v: unknown, max: number): v is string {
  return typeof v === 'string' && v.length <= max;
}

/** What a message looked like, for the log line that says it was ignored (never its content: it may be a key). */
export function describe(m: unknown): string {
  if (m === null || typeof m !== 'object') return m === null ? 'null' : typeof m;
  const type = (m as { type?: unknown }).type;
  return typeof type === 'string' ? `type ${JSON.stringify(type.slice(0, 40))}` : Array.isArray(m) ? 'array' : 'object';
}
