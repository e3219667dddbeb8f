import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Finding "internal listeners reachable directly" (issue 25, attack 6): the bundled control plane and Agent Server
 * listen on loopback ports, and a deployment's own process could call them there, past the edge's rate limits and key
 * checks. They now answer only requests carrying the per-boot secret the edge adds when it forwards
 * (services/internal-auth.ts): anything else gets 403 with a JSON `{detail}`, and a client cannot send the header
 * through the edge (it is dropped there).
 */
let gw: TestGateway;
let origins: string[];

beforeAll(async () => {
  gw = await startTestGateway();
  // The bundled services' loopback origins (what a deployment finds by scanning ports): the Agent Server's from the
  // log, the control plane's as the edge knows it.
  const agent = new URL(String((await gw.logs.waitFor((l) => l.msg === 'default deployment serving')).url)).origin;
  const known = (process.env.GATEWAY_INTERNAL_ORIGINS ?? '').split(' ').filter(Boolean);
  origins = [agent, ...known.filter((o) => o !== agent)];
});
afterAll(async () => {
  await gw?.close();
});

describe('the bundled services on their loopback ports', () => {
  it('refuse a direct request: 403 {detail}', async () => {
    for (const origin of origins) {
      for (const path of ['/ok', '/v2/deployments']) {
        const res = await fetch(`${origin}${path}`);
        expect(res.status).toBe(403);
        expect(await res.json()).toEqual({ detail: expect.stringMatching(/^Forbidden/) });
      }
    }
  });

  it('refuse a guessed secret', async () => {
    for (const origin of origins) {
      const res = await fetch(`${origin}/ok`, { headers: { 'x-gateway-internal': 'x'.repeat(43) } });
      expect(res.status).toBe(403);
    }
  });

  it('answer what the edge forwards, and a client cannot send the header through it', async () => {
    const ok = await fetch(`${gw.url}/ok`, { headers: { 'x-gateway-internal': 'forged' } });
    expect(ok.status).toBe(200);
    const cp = await fetch(`${gw.url}/v2/deployments`);
    expect(cp.status).not.toBe(403);
    expect(JSON.stringify(await cp.json())).not.toMatch(/Forbidden: this service/);
  });
});
