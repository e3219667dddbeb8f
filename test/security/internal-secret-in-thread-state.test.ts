import { fileURLToPath } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Finding "the per-boot internal secret reaches end users": the edge adds `x-gateway-internal` to requests for the
 * bundled Agent Server, and a run copies every `x-*` header into `config.configurable`, so any user of the default
 * app read the secret from a thread's state after one run (and, with it, reached the bundled services from inside a
 * sandbox past every edge limit). Now the bundled services take the header off once they have checked it, before the
 * app, its auth handler or a run sees the request.
 */
const APP = fileURLToPath(new URL('./fixtures/internal-secret-app/langgraph.json', import.meta.url));

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ APP_CONFIG: APP });
}, 60_000);
afterAll(() => gw?.close());

const call = async (path: string, body?: unknown, extra: Record<string, string> = {}) => {
  const res = await fetch(`${gw.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: 'Bearer alice', 'content-type': 'application/json', ...extra },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
};

describe('the edge-to-service secret stays on that hop', { timeout: 60_000 }, () => {
  it('is neither in a run’s configurable nor in the thread’s state and history, nor seen by the auth handler', async () => {
    const secret = process.env.GATEWAY_INTERNAL_SECRET;
    expect(secret).toBeTruthy();
    const thread = await call('/threads', {});
    expect(thread.status, thread.text).toBe(200);
    const id = (JSON.parse(thread.text) as { thread_id: string }).thread_id;
    const run = await call(`/threads/${id}/runs/wait`, { assistant_id: 'probe', input: {} });
    expect(run.status, run.text).toBe(200);
    const configurable = JSON.parse((JSON.parse(run.text) as { configurable: string }).configurable) as object;
    expect(Object.keys(configurable)).not.toContain('x-gateway-internal');
    for (const path of [`/threads/${id}`, `/threads/${id}/state`, `/threads/${id}/history`]) {
      const read = await call(path);
      expect(read.status, path).toBe(200);
      expect(read.text, path).not.toContain(secret);
      expect(read.text, path).not.toContain('x-gateway-internal');
    }
    expect(run.text).not.toContain(secret);
    expect(gw.logs.raw()).not.toContain(secret);
  });

  it('a client that sends the header itself gets it dropped at the edge (and is still served)', async () => {
    const thread = await call('/threads', {}, { 'x-gateway-internal': 'forged' });
    expect(thread.status, thread.text).toBe(200);
    const id = (JSON.parse(thread.text) as { thread_id: string }).thread_id;
    const run = await call(
      `/threads/${id}/runs/wait`,
      { assistant_id: 'probe', input: {} },
      { 'x-gateway-internal': 'forged' },
    );
    expect(run.status, run.text).toBe(200);
    expect(run.text).not.toContain('forged');
  });

  it('is not in the configurable of a run started inside a WebSocket', async () => {
    const secret = process.env.GATEWAY_INTERNAL_SECRET!;
    const client = new Client({ apiUrl: gw.url, apiKey: null });
    const thread = client.threads.stream({
      assistantId: 'probe',
      transport: 'websocket',
      webSocketFactory: (url: string) =>
        new WebSocket(url, { headers: { authorization: 'Bearer alice' } }) as unknown as globalThis.WebSocket,
    });
    const { run_id } = await thread.run.start({ input: {} });
    const joined = await call(`/threads/${thread.threadId}/runs/${run_id}/join`);
    await thread.close();
    expect(joined.status, joined.text).toBe(200);
    const configurable = JSON.parse((JSON.parse(joined.text) as { configurable: string }).configurable) as object;
    expect(Object.keys(configurable)).not.toContain('x-gateway-internal');
    expect(joined.text).not.toContain(secret);
  });
});
