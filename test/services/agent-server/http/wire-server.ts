import { afterAll, beforeAll } from 'vitest';
import { newKey, startAgentServer, type RunningAgentServer } from '../helpers.ts';

/**
 * The Agent Server alone on port 0, over plain HTTP: what the wire looks
 * like (SSE framing, headers, error bodies) independent of any client.
 * `wireServer()` starts one for the calling test file (before its tests,
 * closed after them) and answers how to call it with a key of its own.
 */
export function wireServer() {
  let as: RunningAgentServer;
  const key = newKey();
  beforeAll(async () => {
    as = await startAgentServer({ heartbeatMs: 100 });
  });
  afterAll(() => as.close());

  const call = (
    path: string,
    init: { method?: string; body?: unknown; key?: string | null; signal?: AbortSignal } = {},
  ) =>
    fetch(`${as.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.key === null ? {} : { 'x-api-key': init.key ?? key }), 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
      signal: init.signal,
    });
  const json = async (path: string, init: Parameters<typeof call>[1] = {}) => {
    const res = await call(path, init);
    return { status: res.status, headers: res.headers, body: await res.json() };
  };
  const newThread = async () => (await json('/threads', { body: {} })).body.thread_id as string;
  return { key, call, json, newThread };
}
