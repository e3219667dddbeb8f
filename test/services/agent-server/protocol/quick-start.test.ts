import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newKey, startAgentServer, startStack, userInput, type RunningAgentServer, type Stack } from '../helpers.ts';

/**
 * The SDK 1.15 quick start, unmodified: `client.threads.stream({assistantId})` → `thread.run.start({input})` →
 * `for await (const message of thread.messages)`, over server-sent events through the edge and over a WebSocket to
 * the Agent Server, straight and through the edge (Node: headers from a `webSocketFactory`).
 */
let stack: Stack;
let direct: RunningAgentServer;
beforeAll(async () => {
  [stack, direct] = await Promise.all([startStack(), startAgentServer()]);
});
afterAll(async () => {
  await Promise.all([stack.close(), direct.close()]);
});

async function quickStart(client: Client, options: Record<string, unknown> = {}) {
  const thread = client.threads.stream({ assistantId: 'agent', ...options });
  const { run_id } = await thread.run.start({ input: userInput('hello protocol') });
  const texts: string[] = [];
  const deltas: number[] = [];
  for await (const message of thread.messages) {
    let n = 0;
    for await (const _delta of message.text) n += 1;
    deltas.push(n);
    texts.push(await message.text);
  }
  await thread.close();
  return { threadId: thread.threadId, runId: run_id, texts, deltas };
}

describe('the SDK quick start', () => {
  it('streams the reply token by token over server-sent events, through the edge', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: stack.url, apiKey: key });
    const { threadId, runId, texts, deltas } = await quickStart(client);
    expect(texts.at(-1)).toContain('You said "hello protocol"');
    expect(Math.max(...deltas)).toBeGreaterThan(5);
    // an ordinary run: listed, finished, its thread holding the conversation
    const runs = await client.runs.list(threadId);
    expect(runs.map((r) => r.run_id)).toEqual([runId]);
    const state = await client.threads.getState<{ messages: { content: unknown }[] }>(threadId);
    expect(JSON.stringify(state.values.messages.at(-1)?.content)).toContain('hello protocol');
    expect((await client.runs.get(threadId, runId!)).status).toBe('success');
  });

  it('streams the reply over a WebSocket, with headers from a webSocketFactory', async () => {
    const key = newKey();
    // No apiKey: the SDK refuses default headers on a WebSocket (a browser cannot send them); the factory adds it.
    const client = new Client({ apiUrl: direct.url, apiKey: null });
    const { texts, deltas } = await quickStart(client, {
      transport: 'websocket',
      webSocketFactory: (url: string) => new WebSocket(url, { headers: { 'x-api-key': key } }),
    });
    expect(texts.at(-1)).toContain('You said "hello protocol"');
    expect(Math.max(...deltas)).toBeGreaterThan(5);
  });

  it('streams the reply over a WebSocket through the edge (limited at the upgrade, commands counted)', async () => {
    const key = newKey();
    const client = new Client({ apiUrl: stack.url, apiKey: null });
    const { threadId, runId, texts, deltas } = await quickStart(client, {
      transport: 'websocket',
      webSocketFactory: (url: string) => new WebSocket(url, { headers: { 'x-api-key': key } }),
    });
    expect(texts.at(-1)).toContain('You said "hello protocol"');
    expect(Math.max(...deltas)).toBeGreaterThan(5);
    const rest = new Client({ apiUrl: stack.url, apiKey: key });
    expect((await rest.runs.get(threadId, runId!)).status).toBe('success');
  });
});
