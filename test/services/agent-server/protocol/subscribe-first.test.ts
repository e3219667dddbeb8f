import { randomUUID } from 'node:crypto';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  FIXTURE_AUTH_APP,
  newKey,
  parseSse,
  startAgentServer,
  userInput,
  type RunningAgentServer,
} from '../helpers.ts';

/**
 * Subscribing before the first run (issue 35, item 1): the official server makes a thread's protocol record on first
 * use, so `thread.subscribe(...)` on a thread id that does not exist yet is accepted, and it delivers the events of
 * the run started next. A reader who came early still gets only what it may read: once the run made the thread, a
 * reader of another team is ended with nothing delivered.
 */
let server: RunningAgentServer;
/** The app with its own authorization: `x-user` names the user, `x-team` their team; a thread is its team's. */
let teams: RunningAgentServer;
beforeAll(async () => {
  [server, teams] = await Promise.all([startAgentServer(), startAgentServer({ configPath: FIXTURE_AUTH_APP })]);
});
afterAll(() => Promise.all([server.close(), teams.close()]));

const as = (user: string, team: string) => ({ 'x-user': user, 'x-team': team, 'content-type': 'application/json' });

interface Seen {
  method: string;
  params: { namespace: string[]; data?: unknown };
}

/** Subscribes (SDK 1.15, unmodified) to a fresh thread before any run, then starts one; the events read. */
async function subscribeThenRun(client: Client, options: Record<string, unknown> = {}) {
  const threadId = randomUUID();
  const thread = client.threads.stream(threadId, { assistantId: 'agent', ...options });
  const subscription = await thread.subscribe(['lifecycle', 'values']);
  const seen: Seen[] = [];
  const reading = (async () => {
    for await (const event of subscription as AsyncIterable<Seen>) {
      seen.push(event);
      const data = event.params.data as { event?: string } | undefined;
      if (
        event.method === 'lifecycle' &&
        event.params.namespace.length === 0 &&
        (data?.event === 'completed' || data?.event === 'failed')
      )
        break;
    }
  })();
  const { run_id } = await thread.run.start({ input: userInput('early bird') });
  await reading;
  await thread.close();
  return { threadId, runId: run_id, seen };
}

function expectWholeRun(seen: Seen[]) {
  const lifecycle = seen
    .filter((e) => e.method === 'lifecycle' && e.params.namespace.length === 0)
    .map((e) => (e.params.data as { event: string }).event);
  expect(lifecycle).toEqual(['running', 'completed']);
  const last = seen.filter((e) => e.method === 'values').at(-1)?.params.data;
  expect(JSON.stringify(last)).toContain('You said \\"early bird\\"');
}

describe('a subscription made before the thread exists', () => {
  it('is accepted over server-sent events and delivers the next run', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: server.url, apiKey: key });
    const { threadId, runId, seen } = await subscribeThenRun(client);
    expectWholeRun(seen);
    expect((await client.runs.get(threadId, runId!)).status).toBe('success');
  });

  it('is accepted over a WebSocket and delivers the next run', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: server.url, apiKey: null });
    const { seen } = await subscribeThenRun(client, {
      transport: 'websocket',
      webSocketFactory: (url: string) => new WebSocket(url, { headers: { 'x-api-key': key } }),
    });
    expectWholeRun(seen);
  });

  it("ends another team's early reader once the run made the thread, having delivered nothing", async () => {
    const threadId = randomUUID();
    const stranger = await fetch(`${teams.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: as('bob', 'blue'),
      body: JSON.stringify({ channels: ['lifecycle', 'values', 'messages'] }),
    });
    expect(stranger.status).toBe(200);
    const strangerText = stranger.text();
    const teammate = await fetch(`${teams.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: as('carol', 'red'),
      body: JSON.stringify({ channels: ['lifecycle'] }),
    });
    expect(teammate.status).toBe(200);
    const started = await fetch(`${teams.url}/threads/${threadId}/commands`, {
      method: 'POST',
      headers: as('alice', 'red'),
      body: JSON.stringify({ id: 1, method: 'run.start', params: { assistant_id: 'whoami', input: userInput('me') } }),
    });
    expect(await started.json()).toMatchObject({ type: 'success' });
    // The stranger's stream ended (the thread is not their team's) and carried no event of the run.
    const frames = parseSse(await strangerText).filter((f) => f.event !== null);
    expect(frames).toEqual([]);
    // Alice's teammate, early too, reads the run to its end: the root's `completed` (a node's own lifecycle events,
    // in a namespace below, may say `completed` before it).
    const reader = teammate.body!.pipeThrough(new TextDecoderStream()).getReader();
    const rootLifecycle = (text: string) =>
      parseSse(text.slice(0, text.lastIndexOf('\n\n') + 2)) // whole events only
        .filter((f) => f.event === 'lifecycle')
        .map((f) => (JSON.parse(f.data!) as Seen).params)
        .filter((p) => p.namespace.length === 0);
    let text = '';
    while (!rootLifecycle(text).some((p) => (p.data as { event: string }).event === 'completed')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    await reader.cancel();
    const root = rootLifecycle(text);
    expect(root.map((p) => (p.data as { event: string }).event)).toEqual(['running', 'completed']);
  });

  it("still refuses a subscription to a thread that exists and is not the caller's (404)", async () => {
    const threadId = randomUUID();
    const started = await fetch(`${teams.url}/threads/${threadId}/commands`, {
      method: 'POST',
      headers: as('alice', 'red'),
      body: JSON.stringify({ id: 1, method: 'run.start', params: { assistant_id: 'whoami', input: userInput('me') } }),
    });
    expect(await started.json()).toMatchObject({ type: 'success' });
    const res = await fetch(`${teams.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: as('bob', 'blue'),
      body: JSON.stringify({ channels: ['values'] }),
    });
    expect(res.status).toBe(404);
  });
});
