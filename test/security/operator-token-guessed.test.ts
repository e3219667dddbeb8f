import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Finding "the operator token has no throttle on guesses": the admin listener (reachable from the host's loopback,
 * where tenants' code runs) answered every wrong ADMIN_TOKEN with a 401, as fast as it was asked. Now after 10 wrong
 * tokens from one address in a minute every token-guarded request of that address answers 429 with Retry-After,
 * the right token included; the probes stay open.
 */
const TOKEN = 'operator-token-0123456789abcdef';
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'warn' });
});
afterAll(() => gw?.close());

const admin = (path: string, token: string | null) =>
  fetch(`http://127.0.0.1:${gw.gateway.admin.port}${path}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });

describe('guessing the operator token', () => {
  it('10 wrong tokens a minute, then 429 with Retry-After for every token-guarded request; probes still answer', async () => {
    expect((await admin('/metrics', TOKEN)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await admin(i % 2 ? '/metrics' : '/keys', `guess-${i}`)).status);
    expect(statuses).toEqual(Array(10).fill(401));

    const throttled = await admin('/metrics', 'guess-10');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await throttled.json()) as { code: string }).code).toBe('too_many_token_failures');
    // A right guess now is no different from a wrong one.
    expect((await admin('/metrics', TOKEN)).status).toBe(429);
    expect((await admin('/healthz', null)).status).toBe(200);
    expect((await admin('/readyz', null)).status).toBe(200);
  });
});
