import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { route } from '../routing/contract.ts';
import { deferred, within } from '../helpers/async.ts';
import { startDeployment, type TestDeployment } from '../helpers/deployment-upstream.ts';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * A rollover through the real edge: the route of a deployment moves from one process (a real server on port 0) to
 * another while requests keep coming and a stream is open on the old one. Nothing may fail: what is in flight on the
 * old process finishes there, what comes after goes to the new one, and the old one is let go once idle.
 */

let gw: TestGateway, agent: TestUpstream, control: TestUpstream, rules: ReturnType<typeof rulesDir>;

beforeAll(async () => {
  rules = rulesDir(OPEN_RULES);
  [agent, control] = await Promise.all([startUpstream(), startUpstream()]);
  gw = await startTestGateway({ AGENT_SERVER_URL: agent.url, CONTROL_PLANE_URL: control.url, RULES_DIR: rules.dir });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([agent?.close(), control?.close()]);
  rules?.remove();
});

/** Open sockets the server holds now (the edge's pool to it). */
const connections = (d: TestDeployment) =>
  new Promise<number>((resolve, reject) => d.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

describe('rollover', () => {
  it('under a loop of requests and one open stream: zero failed requests, the stream ends cleanly', async () => {
    const id = randomUUID();
    const [old, next] = await Promise.all([startDeployment('old'), startDeployment('new')]);
    try {
      // The old process answers slowly, so requests are in flight on it when the route moves.
      old.handlers.set('/slow', async (req, res) => {
        req.resume();
        await new Promise((r) => setTimeout(r, 30));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ server: 'old' }));
      });
      next.handlers.set('/slow', (req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ server: 'new' }));
      });
      const finish = deferred();
      old.handlers.set('/stream', async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: metadata\ndata: {"run_id":"r1"}\n\n');
        await finish.promise;
        res.write('event: values\ndata: {"done":true}\n\n');
        res.end('event: end\ndata: null\n\n');
      });
      await gw.gateway.routes.set(route(id, old.url, 'rev-1'));
      const base = `${gw.url}/deployments/${id}`;

      // The stream, opened on the old process.
      const stream = await request(`${base}/stream`);
      expect(stream.statusCode).toBe(200);
      const streamText = (async () => {
        let text = '';
        for await (const chunk of stream.body) text += chunk.toString();
        return text;
      })();

      // The loop: four clients sending one request after another until told to stop.
      const results: { status: number; server: unknown }[] = [];
      const failures: unknown[] = [];
      let stop = false;
      const client = async () => {
        while (!stop) {
          try {
            const res = await request(`${base}/slow`);
            results.push({ status: res.statusCode, server: ((await res.body.json()) as { server: unknown }).server });
          } catch (err) {
            failures.push(err);
          }
        }
      };
      const loop = Promise.all([client(), client(), client(), client()]);
      await vi.waitFor(() => expect(results.length).toBeGreaterThan(20), { timeout: 10_000 });

      await gw.gateway.routes.set(route(id, next.url, 'rev-2'));
      const switched = results.length;
      await vi.waitFor(
        () => expect(results.slice(switched).filter((r) => r.server === 'new').length).toBeGreaterThan(20),
        {
          timeout: 10_000,
        },
      );
      // Four clients, one request each at a time: at most four were already on their way to the old process.
      expect(results.slice(switched).filter((r) => r.server === 'old').length).toBeLessThanOrEqual(4);

      // The stream is still open on the old process; it ends as it would after the run.
      finish.resolve();
      const text = await within(streamText, 5000, 'the stream on the old process');
      expect(text).toBe(
        'event: metadata\ndata: {"run_id":"r1"}\n\nevent: values\ndata: {"done":true}\n\nevent: end\ndata: null\n\n',
      );
      // Idle and retired, the old pool lets its connections go: the old process can stop.
      await vi.waitFor(async () => expect(await connections(old)).toBe(0), { timeout: 10_000 });
      await old.close();

      stop = true;
      await loop;
      expect(failures).toEqual([]);
      expect(results.filter((r) => r.status !== 200)).toEqual([]);
      expect(new Set(results.map((r) => r.server))).toEqual(new Set(['old', 'new']));
      // And after the old process is gone, the deployment still serves.
      const after = await request(`${base}/slow`);
      expect(await after.body.json()).toEqual({ server: 'new' });
    } finally {
      await Promise.all([old.close(), next.close()]);
    }
  });

  it('a deleted deployment lets go of its process once idle (no request needs to ask for it)', async () => {
    const id = randomUUID();
    const d = await startDeployment('gone-soon');
    try {
      await gw.gateway.routes.set(route(id, d.url));
      expect((await request(`${gw.url}/deployments/${id}/info`)).statusCode).toBe(200);
      expect(await connections(d)).toBeGreaterThan(0);
      await gw.gateway.routes.delete(id);
      await vi.waitFor(async () => expect(await connections(d)).toBe(0), { timeout: 10_000 });
    } finally {
      await d.close();
    }
  });
});
