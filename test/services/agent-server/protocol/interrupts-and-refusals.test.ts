import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newKey, startAgentServer, userInput, type RunningAgentServer } from '../helpers.ts';

/**
 * An interrupt answered with `thread.input.respond` (SDK 1.15, unmodified), and the WebSocket refusals the SDK reads
 * from the close code (4000 + the HTTP status).
 */
let server: RunningAgentServer;
beforeAll(async () => {
  server = await startAgentServer();
});
afterAll(() => server.close());

const wsClient = (key: string) => ({
  client: new Client({ apiUrl: server.url, apiKey: null }),
  options: {
    transport: 'websocket' as const,
    webSocketFactory: (url: string) => new WebSocket(url, { headers: { 'x-api-key': key } }),
  },
});

async function interruptRound(client: Client, options: Record<string, unknown> = {}) {
  const thread = client.threads.stream({ assistantId: 'approval', ...options });
  await thread.run.start({ input: userInput('delete everything') });
  const asked = await waitFor(() => thread.interrupts[0]);
  expect(asked.payload).toEqual({ question: 'May I answer "delete everything"?' });
  await waitFor(() => thread.interrupted || undefined);
  await thread.input.respond({ namespace: [], interrupt_id: asked.interruptId, response: 'no' });
  // The resumed run's answer, read with state.get (a protocol command) once it is in the thread's state.
  let values: unknown;
  await waitForAsync(async () => {
    const { values: v } = (await thread.state.get({ namespace: [] })) as { values: { messages?: unknown[] } };
    values = v;
    return (v.messages?.length ?? 0) >= 2 ? true : undefined;
  });
  await thread.close();
  return { threadId: thread.threadId, values: values as { messages: { content: unknown }[] } };
}

describe('interrupts', () => {
  it('are answered with input.respond over server-sent events', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: server.url, apiKey: key });
    const { threadId, values } = await interruptRound(client);
    expect(JSON.stringify(values.messages.at(-1)?.content)).toContain('The human said: \\"no\\"');
    const runs = await client.runs.list(threadId);
    expect(runs).toHaveLength(2); // the run that asked and the one that resumed: ordinary runs
  });

  it('are answered with input.respond over a WebSocket', async () => {
    const { client, options } = wsClient(newKey());
    const { values } = await interruptRound(client, options);
    expect(JSON.stringify(values.messages.at(-1)?.content)).toContain('The human said');
  });

  it('refuses an answer to an interrupt that is not pending: no_such_interrupt', async () => {
    const key = newKey();
    const threadId = crypto.randomUUID();
    await command(key, threadId, {
      id: 1,
      method: 'run.start',
      params: { assistant_id: 'approval', input: userInput('x') },
    });
    const answer = await command(key, threadId, {
      id: 2,
      method: 'input.respond',
      params: { namespace: [], interrupt_id: 'not-an-interrupt', response: 1 },
    });
    expect(answer).toMatchObject({ type: 'error', id: 2, error: 'no_such_interrupt' });
  });
});

describe('refusals', () => {
  it('closes a WebSocket without credentials with 4401', async () => {
    expect(await closeCode(`/threads/${crypto.randomUUID()}/stream/events`, {})).toBe(4401);
  });

  it("closes a WebSocket with another organisation's key with 4401, and on a bad thread id with 4422", async () => {
    const owner = newKey('acme');
    const threadId = crypto.randomUUID();
    await command(owner, threadId, {
      id: 1,
      method: 'run.start',
      params: { assistant_id: 'agent', input: userInput('x') },
    });
    expect(await closeCode(`/threads/${threadId}/stream/events`, { 'x-api-key': newKey('other') })).toBe(4401);
    expect(await closeCode('/threads/not-a-uuid/stream/events', { 'x-api-key': owner })).toBe(4422);
  });

  it('answers 426 to a plain GET of the socket path and refuses other upgrades', async () => {
    const res = await fetch(`${server.url}/threads/${crypto.randomUUID()}/stream/events`, {
      headers: { 'x-api-key': newKey() },
    });
    expect(res.status).toBe(426);
    expect(await closeOrError('/threads')).toBe('error');
  });

  it('takes the API key from the subprotocol, as a browser sends it', async () => {
    const key = newKey();
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/${crypto.randomUUID()}/stream/events`, [
      'x-api-key',
      key,
    ]);
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    expect(ws.protocol).toBe('x-api-key');
    ws.close();
  });
});

async function command(key: string, threadId: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${server.url}/threads/${threadId}/commands`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return res.json();
}

function closeCode(path: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}${path}`, { headers });
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

function closeOrError(path: string): Promise<'close' | 'error'> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}${path}`);
  return new Promise((resolve) => {
    ws.once('error', () => resolve('error'));
    ws.once('close', () => resolve('close'));
  });
}

async function waitFor<T>(get: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitForAsync<T>(get: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
