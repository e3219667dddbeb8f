import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * One edge for a test file: the shipped US rules, the memory store, a real
 * upstream that records what reached it (started in `beforeAll`, closed in
 * `afterAll`). Each test uses identities of its own (`fresh`), so the tests
 * of a file share one gateway without sharing buckets.
 */
export interface UsEdge {
  /** Set once `beforeAll` has run. */
  readonly gw: TestGateway;
  readonly upstream: TestUpstream;
  send(path: string, headers?: Record<string, string>, method?: string): Promise<Sent>;
  /** The requests that reached the upstream with header `name` equal to `value`. */
  seenWith(name: string, value: string): TestUpstream['seen'];
}

export interface Sent {
  readonly status: number;
  readonly headers: Awaited<ReturnType<typeof request>>['headers'];
  readonly text: string;
}

export const fresh = (label: string) => `${label}-${randomUUID()}`;

export function usEdge(): UsEdge {
  const edge: UsEdge & { gw: TestGateway; upstream: TestUpstream } = {
    gw: undefined as unknown as TestGateway,
    upstream: undefined as unknown as TestUpstream,
    async send(path, headers = {}, method = 'POST') {
      const res = await request(`${edge.gw.url}${path}`, { method, headers });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    },
    seenWith: (name, value) => edge.upstream.seen.filter((r) => r.headers[name] === value),
  };
  beforeAll(async () => {
    edge.upstream = await startUpstream();
    edge.gw = await startTestGateway({ AGENT_SERVER_URL: edge.upstream.url, CONTROL_PLANE_URL: edge.upstream.url });
    // Warm up (connections to both sides, JIT) so a 15-request burst takes tens of ms: the
    // runs-query api-key bucket refills a token every 667 ms, and the burst tests count on
    // none arriving mid-burst.
    await Promise.all(Array.from({ length: 20 }, () => edge.send('/runs/query', { 'x-api-key': fresh('warm-up') })));
  });
  afterAll(async () => {
    await edge.gw?.close();
    await edge.upstream?.close();
  });
  return edge;
}
