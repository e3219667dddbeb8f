import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { collect, connectRaw, head } from '../helpers/raw-http.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Finding "pipelined after closing response": a request pipelined on the same socket behind one whose answer closes
 * the connection (a 400, or a 429/413 answered to `Expect: 100-continue` without `100 Continue`) was still handled and
 * sent upstream, though its answer could never come back. Nothing after a closing response may reach an upstream.
 */
const RULES = `
- id: tight
  match: { prefix: /limited }
  limits:
    - { by: ip, count: 1, per: 1h, category: Tight }
`;

let upstream: TestUpstream;
let gw: TestGateway;
let rules: ReturnType<typeof rulesDir>;

beforeAll(async () => {
  rules = rulesDir(RULES);
  upstream = await startUpstream();
  gw = await startTestGateway({
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    MAX_BODY: '1KiB',
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

const host: [string, string] = ['Host', 'edge.test'];
const after = (marker: string) => head(`GET /after-${marker} HTTP/1.1`, [host, ['Connection', 'close']]);

/** Writes `bytes` in one write, waits for the server to close, then a little longer for anything sent upstream late. */
async function exchange(bytes: string): Promise<{ status: number; text: string }> {
  const socket = await connectRaw(gw.port);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const res = collect(socket);
  socket.write(bytes);
  const { status } = await res;
  await sleep(300);
  return { status, text: Buffer.concat(chunks).toString('latin1') };
}

const reached = (marker: string) => upstream.seen.filter((r) => r.url.startsWith(`/after-${marker}`)).length;

describe('a request pipelined behind a response that closes the connection never reaches the upstream', () => {
  it('behind a 400 (invalid path)', async () => {
    const { status } = await exchange(head('GET /bad/%zz HTTP/1.1', [host]) + after('400'));
    expect(status).toBe(400);
    expect(reached('400')).toBe(0);
  });

  it('behind a 429 answered to Expect: 100-continue (body sent anyway)', async () => {
    await exchange(head('GET /limited/first HTTP/1.1', [host, ['Connection', 'close']])); // takes the only token
    const denied = head('POST /limited/x HTTP/1.1', [host, ['Expect', '100-continue'], ['Content-Length', '5']]);
    const { status, text } = await exchange(denied + 'hello' + after('429'));
    expect(status).toBe(429);
    expect(text).not.toContain('100 Continue');
    expect(reached('429')).toBe(0);
  });

  it('behind a 413 answered to Expect: 100-continue (body sent anyway)', async () => {
    const big = head('POST /upload HTTP/1.1', [host, ['Expect', '100-continue'], ['Content-Length', '2000']]);
    const { status } = await exchange(big + 'x'.repeat(2000) + after('413'));
    expect(status).toBe(413);
    expect(reached('413')).toBe(0);
  });

  it('pipelining behind keep-alive answers still works, in order', async () => {
    const { text } = await exchange(head('GET /p1 HTTP/1.1', [host]) + head('GET /p2 HTTP/1.1', [host]) + after('ok'));
    expect(text.match(/HTTP\/1\.1 200/g)).toHaveLength(3);
    const order = ['"/p1"', '"/p2"', '"/after-ok"'].map((u) => text.indexOf(u));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(reached('ok')).toBe(1);
  });
});
