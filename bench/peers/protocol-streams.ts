import { Client } from '@langchain/langgraph-sdk';
import WebSocket from 'ws';

/**
 * The thread-centric protocol beside the legacy `runs.stream`, on one Agent Server, the same graph and input: each of
 * `concurrency` clients runs back to back for `roundMs`, and every event a client gets is counted.
 *
 * - `legacy`: `client.runs.stream(threadId, 'agent', {streamMode: ['values', 'messages-tuple']})` on a new thread;
 *   the first event is `metadata`.
 * - `sse` / `websocket`: `client.threads.stream({assistantId: 'agent'})`, `run.start`, one subscription to `values`,
 *   `messages` and `lifecycle` read until the root's terminal `lifecycle`; the first event is the root's `running`,
 *   sent as the run is accepted, before it waits for its readers to settle (docs/agent-server.md): that wait shows in
 *   runs and events per second, not in the time to first event. Time to first event counts from the call that starts
 *   the run.
 */
export type Transport = 'legacy' | 'sse' | 'websocket';

export interface ProtocolRound {
  readonly runs: number;
  readonly events: number;
  readonly seconds: number;
  /** Milliseconds from the start call to the first event, one per run. */
  readonly firsts: number[];
}

const input = { messages: [{ role: 'user', content: 'how fast is this?' }] };

export async function protocolRound(
  url: string,
  apiKey: string,
  transport: Transport,
  concurrency: number,
  roundMs: number,
): Promise<ProtocolRound> {
  const firsts: number[] = [];
  let runs = 0;
  let events = 0;
  const start = performance.now();
  const until = start + roundMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const { first, count } =
          transport === 'legacy' ? await legacyRun(url, apiKey) : await protocolRun(url, apiKey, transport);
        firsts.push(first);
        events += count;
        runs++;
      }
    }),
  );
  return { runs, events, seconds: (performance.now() - start) / 1000, firsts };
}

async function legacyRun(url: string, apiKey: string): Promise<{ first: number; count: number }> {
  const client = new Client({ apiUrl: url, apiKey });
  const thread = await client.threads.create();
  const began = performance.now();
  let first = NaN;
  let count = 0;
  for await (const chunk of client.runs.stream(thread.thread_id, 'agent', {
    input,
    streamMode: ['values', 'messages-tuple'],
  })) {
    if (count === 0) first = performance.now() - began;
    count++;
    if (chunk.event === 'error') throw new Error(`legacy run failed: ${JSON.stringify(chunk.data)}`);
  }
  return { first, count };
}

async function protocolRun(
  url: string,
  apiKey: string,
  transport: 'sse' | 'websocket',
): Promise<{ first: number; count: number }> {
  const client = transport === 'sse' ? new Client({ apiUrl: url, apiKey }) : new Client({ apiUrl: url, apiKey: null });
  const thread = client.threads.stream({
    assistantId: 'agent',
    ...(transport === 'websocket'
      ? {
          transport: 'websocket' as const,
          webSocketFactory: (u: string) =>
            new WebSocket(u, { headers: { 'x-api-key': apiKey } }) as unknown as globalThis.WebSocket,
        }
      : {}),
  });
  const began = performance.now();
  let first = NaN;
  let count = 0;
  try {
    await thread.run.start({ input });
    const events = await thread.subscribe({ channels: ['values', 'messages', 'lifecycle'] });
    for await (const event of events as AsyncIterable<{
      method: string;
      params: { namespace: string[]; data: { event?: string } };
    }>) {
      if (count === 0) first = performance.now() - began;
      count++;
      const { method, params } = event;
      if (
        method === 'lifecycle' &&
        params.namespace.length === 0 &&
        ['completed', 'failed', 'interrupted'].includes(params.data.event ?? '')
      )
        break;
    }
  } finally {
    await thread.close();
  }
  return { first, count };
}
