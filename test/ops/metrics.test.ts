import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { metricValue, scrapeMetrics, waitForMetric } from '../helpers/scrape-metrics.ts';
import { echoJson, startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * The admin listener's /metrics after known traffic: request counts by rule,
 * category, decision and status; the upstream and store histograms; breaker
 * state, rule file version and open SSE streams. No identity reaches a
 * metric (or a log line), and the admin listener is never rate limited.
 */

const RULES = `
- id: limited
  match: { prefix: /limited }
  limits:
    - { by: api-key, count: 3, per: 60s, category: Limited }
- id: shadowed
  match: { prefix: /shadowed }
  shadow: true
  limits:
    - { by: user-ip, count: 1, per: 60s, category: Shadowed }
- id: by-ip
  match: { prefix: /by-ip }
  limits:
    - { by: ip, count: 2, per: 60s, category: Per IP }
- id: public
  limits:
    - { by: ip, count: 5, per: 60s, category: Public }
`;

/** Distinctive identities: none of them may appear in the metrics text. */
const API_KEY = 'sk-live-METRICS-7f3a9c2e1d';
const USER_ID = 'user-METRICS-4b1d9e';
const IPV4 = '203.0.113.77';
const IPV4_BY_IP = '198.51.100.23';
const IPV6 = '2001:db8:dead:beef::1';

let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let gw: TestGateway;
let admin: number;
let releaseStream: (() => void) | undefined;
const streams = new Set<ServerResponse>();

beforeAll(async () => {
  rules = rulesDir(RULES);
  upstream = await startUpstream((req, res) => {
    if (req.url !== '/limited/stream') return echoJson(req, res);
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: open\n\n');
    streams.add(res);
    releaseStream = () => res.end('data: bye\n\n');
    res.once('close', () => streams.delete(res));
  });
  gw = await startTestGateway({
    RULES_DIR: rules.dir,
    AGENT_SERVER_URL: upstream.url,
    CONTROL_PLANE_URL: upstream.url,
    // X-Forwarded-For from loopback is believed, so a test can be any client address.
    TRUST_PROXY: '127.0.0.1/32',
  });
  admin = gw.gateway.admin.port;
});

afterAll(async () => {
  streams.forEach((s) => s.destroy());
  await gw?.close();
  await upstream?.close();
  rules?.remove();
});

async function send(path: string, headers: Record<string, string>): Promise<number> {
  const res = await request(`${gw.url}${path}`, { headers });
  await res.body.dump();
  return res.statusCode;
}

const requests = (labels: Record<string, string>, text: string) => metricValue(text, 'gateway_requests_total', labels);

describe('/metrics', () => {
  it('counts allowed, denied and shadow-denied requests by rule, category, decision and status; histograms, breaker, rules and SSE gauges are there; no identity anywhere', async () => {
    const before = await scrapeMetrics(admin);

    const limited = [];
    for (let i = 0; i < 5; i++)
      limited.push(await send('/limited/x', { 'x-api-key': API_KEY, 'x-forwarded-for': IPV4 }));
    expect(limited).toEqual([200, 200, 200, 429, 429]);
    const shadowed = [];
    for (let i = 0; i < 3; i++)
      shadowed.push(await send('/shadowed/x', { 'x-user-id': USER_ID, 'x-forwarded-for': IPV4 }));
    expect(shadowed).toEqual([200, 200, 200]); // shadow: counted, never denied
    const byIp = [];
    for (let i = 0; i < 3; i++) byIp.push(await send('/by-ip/x', { 'x-forwarded-for': IPV4_BY_IP }));
    for (let i = 0; i < 3; i++) byIp.push(await send('/by-ip/x', { 'x-forwarded-for': IPV6 }));
    expect(byIp).toEqual([200, 200, 429, 200, 200, 429]);

    // The SSE gauge: 1 while a stream is open through the edge, 0 once it ended.
    const stream = await request(`${gw.url}/limited/stream`, { headers: { 'x-api-key': `${API_KEY}-stream` } });
    expect(stream.statusCode).toBe(200);
    await waitForMetric(admin, 'gateway_sse_streams_active', {}, (v) => v === 1);
    releaseStream!();
    expect(await stream.body.text()).toBe('data: open\n\ndata: bye\n\n');
    await waitForMetric(admin, 'gateway_sse_streams_active', {}, (v) => v === 0);

    const res = await request(`http://127.0.0.1:${admin}/metrics`);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const after = await res.body.text();
    const delta = (labels: Record<string, string>) => requests(labels, after) - requests(labels, before);

    expect(delta({ rule: 'limited', category: 'Limited', decision: 'allowed', status: '200' })).toBe(3 + 1); // + the stream
    expect(delta({ rule: 'limited', category: 'Limited', decision: 'denied', status: '429' })).toBe(2);
    expect(delta({ rule: 'shadowed', category: 'Shadowed', decision: 'allowed', status: '200' })).toBe(1);
    expect(delta({ rule: 'shadowed', category: 'Shadowed', decision: 'shadow-denied', status: '200' })).toBe(2);
    expect(delta({ rule: 'shadowed', decision: 'denied' })).toBe(0);
    expect(delta({ rule: 'by-ip', category: 'Per IP', decision: 'allowed', status: '200' })).toBe(4);
    expect(delta({ rule: 'by-ip', category: 'Per IP', decision: 'denied', status: '429' })).toBe(2);
    expect(delta({})).toBe(5 + 3 + 6 + 1); // nothing else was counted

    // Everything forwarded (allowed and shadow-denied) went through the upstream histogram, once.
    const histogram = (name: string, labels: Record<string, string>) =>
      metricValue(after, name, labels) - metricValue(before, name, labels);
    expect(histogram('gateway_upstream_duration_seconds_count', { upstream: 'agent-server', status: '200' })).toBe(
      4 + 3 + 4,
    );
    expect(
      histogram('gateway_upstream_duration_seconds_bucket', { upstream: 'agent-server', status: '200', le: '+Inf' }),
    ).toBe(4 + 3 + 4);
    // Every limited request asked the store once, denials included.
    expect(histogram('gateway_store_duration_seconds_count', { store: 'memory', result: 'ok' })).toBe(15);
    expect(after).toMatch(/^gateway_store_duration_seconds_sum\{store="memory",result="ok"\} [0-9.e-]+$/m);
    expect(after).toMatch(/^gateway_store_breaker_state 0$/m);
    expect(metricValue(after, 'gateway_store_errors_total')).toBe(0);
    expect(after).toMatch(/^gateway_rules_info\{region="us",version="[0-9a-f]{12}"\} 1$/m);
    expect(after).toMatch(/^gateway_sse_streams_active 0$/m);
    // prom-client's defaults under the `gateway_` prefix (its own names start with process_ or nodejs_).
    expect(after).toMatch(/^gateway_process_resident_memory_bytes \d+/m);
    expect(after).toMatch(/^gateway_nodejs_heap_size_used_bytes \d+/m);

    // No raw identity in any metric: not as a label, not anywhere in the text. Nor in a log line.
    const identities = [API_KEY, USER_ID, IPV4, IPV4_BY_IP, IPV6, '2001:db8:dead:beef'];
    for (const identity of identities) {
      expect(after, identity).not.toContain(identity);
      expect(gw.logs.raw(), identity).not.toContain(identity);
    }
  });

  it('the admin listener is never rate limited: /healthz, /readyz and /metrics far beyond any limit', async () => {
    // The same client on the edge is limited by the catch-all rule after 5 requests...
    const client = { 'x-forwarded-for': '192.0.2.200' };
    const edge = [];
    for (let i = 0; i < 6; i++) edge.push(await send('/anything', client));
    expect(edge).toEqual([200, 200, 200, 200, 200, 429]);

    // ...and is never limited on the admin port.
    const statuses = new Map<number, number>();
    const hammer = async (path: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await request(`http://127.0.0.1:${admin}${path}`, { headers: client });
        await res.body.dump();
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        expect(res.headers['ratelimit']).toBeUndefined();
      }
    };
    await Promise.all([
      ...Array.from({ length: 10 }, () => hammer('/healthz', 50)),
      hammer('/readyz', 50),
      hammer('/metrics', 20),
    ]);
    expect(Object.fromEntries(statuses)).toEqual({ 200: 10 * 50 + 50 + 20 });
    // Admin requests are not edge requests: not counted as such.
    const text = await scrapeMetrics(admin);
    expect(requests({ rule: 'public', decision: 'allowed' }, text)).toBe(5);
    expect(requests({ rule: 'public', decision: 'denied' }, text)).toBe(1);
  });
});
