import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@langchain/langgraph-sdk';
import { WebSocket } from 'ws';
import { within } from '../helpers/async.ts';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { metricValue, scrapeMetrics } from '../helpers/scrape-metrics.ts';
import { closed, nextMessage, openClient, startWsUpstream, type WsUpstream } from '../helpers/ws-upstream.ts';

/**
 * Commands that start work (`run.start`, `input.respond`) inside a WebSocket on `/threads/{id}/stream/events` are
 * limited as `POST /threads/{id}/commands` for the socket's identity: they share the HTTP command's bucket, and over
 * the limit the socket closes with 4429 (4000 + 429, what the SDK reads as a 429) before the command reaches the
 * upstream. Other commands, and sockets elsewhere, are not counted.
 */

const rules = rulesDir(`
- id: commands
  match: { method: POST, template: "/threads/{id}/commands" }
  limits:
    - { by: api-key, count: 3, per: 3600s, category: Commands }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`);
let up: WsUpstream;
let gw: TestGateway;

/** The upstream answers every command as the protocol's servers do: `{type: "success", id, result}`. */
function answerCommands(ws: WebSocket): void {
  ws.on('message', (data) => {
    try {
      const { id } = JSON.parse(String(data)) as { id: number };
      ws.send(JSON.stringify({ type: 'success', id, result: {} }));
    } catch {
      ws.send('not json');
    }
  });
}

beforeAll(async () => {
  up = await startWsUpstream();
  up.onConnection = answerCommands;
  gw = await startTestGateway({ AGENT_SERVER_URL: up.url, CONTROL_PLANE_URL: up.url, RULES_DIR: rules.dir });
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
  rules.remove();
});

const command = (id: number, method: string, params: object = {}) => JSON.stringify({ id, method, params });

async function send(ws: WebSocket, text: string): Promise<unknown> {
  ws.send(text);
  return JSON.parse(await within(nextMessage(ws), 3000, 'answer')) as unknown;
}

describe('commands inside a WebSocket', () => {
  it('run.start and input.respond share the HTTP command bucket; over it the socket closes 4429 and the command never reaches the upstream', async () => {
    const key = `k-${randomUUID()}`;
    const thread = randomUUID();
    // One over HTTP...
    const http = await request(`${gw.url}/threads/${thread}/commands`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: command(1, 'run.start'),
    });
    await http.body.text();
    expect(http.statusCode).toBe(200);
    expect(http.headers.ratelimit).toBe('"commands.api-key";r=2;t=1200');
    // ...two in the socket...
    const ws = await openClient(`${gw.url}/threads/${thread}/stream/events`, { 'x-api-key': key });
    expect(await send(ws, command(2, 'run.start', { input: { messages: [] } }))).toMatchObject({ id: 2 });
    // Commands that start no work are not counted, however many.
    for (let i = 10; i < 20; i++) expect(await send(ws, command(i, 'subscription.subscribe'))).toMatchObject({ id: i });
    expect(await send(ws, command(3, 'input.respond'))).toMatchObject({ id: 3 });
    // ...and the fourth is refused.
    const closing = closed(ws);
    ws.send(command(4, 'run.start', { marker: 'refused-command' }));
    const { code, reason } = await within(closing, 5000, 'close');
    expect(code).toBe(4429);
    expect(reason).toMatch(/^Rate limit exceeded: rule commands, retry after \d+ s$/);
    expect(up.messages.some((m) => m.includes('refused-command'))).toBe(false);
    // The HTTP side sees the same bucket empty.
    const after = await request(`${gw.url}/threads/${thread}/commands`, {
      method: 'POST',
      headers: { 'x-api-key': key },
      body: command(5, 'run.start'),
    });
    await after.body.text();
    expect(after.statusCode).toBe(429);
    const text = await scrapeMetrics(gw.gateway.admin.port);
    expect(metricValue(text, 'gateway_websocket_commands_total', { rule: 'commands', decision: 'denied' })).toBe(1);
  });

  it('a fragmented, binary or oversized command is counted too (an undecidable message is taken for one)', async () => {
    const key = `k-${randomUUID()}`;
    const ws = await openClient(`${gw.url}/threads/${randomUUID()}/stream/events`, { 'x-api-key': key });
    // Fragmented across three frames.
    const text = command(1, 'run.start');
    ws.send(text.slice(0, 5), { fin: false });
    ws.send(text.slice(5, 12), { fin: false });
    ws.send(text.slice(12), { fin: true });
    expect(JSON.parse(await nextMessage(ws))).toMatchObject({ id: 1 });
    // Binary.
    ws.send(Buffer.from(command(2, 'run.start')), { binary: true });
    expect(JSON.parse(await nextMessage(ws))).toMatchObject({ id: 2 });
    // Longer than the edge reads (64 KiB), its method last: counted without being read.
    const long = `{"id":3,"params":{"pad":"${'x'.repeat(100_000)}"},"method":"run.start"}`;
    ws.send(long);
    expect(JSON.parse(await nextMessage(ws))).toMatchObject({ id: 3 });
    // The bucket (3) is spent: a fourth is refused.
    const closing = closed(ws);
    ws.send(command(4, 'run.start'));
    expect((await within(closing, 5000, 'close')).code).toBe(4429);
  });

  it('the public SDK (threads.stream over a WebSocket) fails a refused run.start with status 429', async () => {
    const key = `k-${randomUUID()}`;
    const threadId = randomUUID();
    for (let i = 0; i < 3; i++) {
      const spent = await request(`${gw.url}/threads/${threadId}/commands`, {
        method: 'POST',
        headers: { 'x-api-key': key },
        body: command(i, 'run.start'),
      });
      await spent.body.text();
    }
    // No client-wide headers: the SDK's WebSocket transport refuses them; the factory below sends the key.
    const client = new Client({ apiUrl: gw.url, apiKey: null });
    const thread = client.threads.stream(threadId, {
      assistantId: 'agent',
      transport: 'websocket',
      maxReconnectAttempts: 0,
      // Node: the socket's headers come from a factory (a browser would send a cookie or a subprotocol).
      webSocketFactory: (url) =>
        new WebSocket(url, { headers: { 'x-api-key': key } }) as unknown as globalThis.WebSocket,
    });
    const started = thread.run.start({ input: { messages: [] } });
    await expect(within(started, 5000, 'run.start settled')).rejects.toMatchObject({ status: 429 });
    await thread.close();
    expect(up.messages.some((m) => m.includes('"run.start"') && m.includes(threadId))).toBe(false);
  });

  it('a socket elsewhere is piped without counting its messages', async () => {
    const key = `k-${randomUUID()}`;
    const ws = await openClient(`${gw.url}/other/socket`, { 'x-api-key': key });
    for (let i = 0; i < 6; i++) expect(await send(ws, command(i, 'run.start'))).toMatchObject({ id: i });
    ws.close();
  });
});
