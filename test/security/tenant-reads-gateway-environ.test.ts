import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "other tenants' secrets and the gateway's settings": every revision
 * ran as a plain child of the gateway, so `/proc/<pid>/environ` of the gateway
 * (SECRETS_KEY, REDIS_URL with its password) and of every other revision (its
 * secrets) was readable from app code. In the sandbox the revision has its own
 * PID namespace: no other process is there to read.
 */
const READ_EVERY_ENVIRON = `
  let all = '';
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
    for (const f of ['environ', 'cmdline']) {
      try { all += fs.readFileSync('/proc/' + pid + '/' + f, 'latin1') + '\\n'; } catch {}
    }
  }
  return all;
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp('', READ_EVERY_ENVIRON));
}, 240_000);
afterAll(() => a?.close());

describe('a tenant reads the environment of the gateway and of other revisions', { timeout: 60_000 }, () => {
  it('finds neither the gateway settings nor the victim secret', async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    const seen = await answer(a, a.hostile);
    expect(seen).not.toContain(a.gatewayMarker);
    expect(seen).not.toContain(a.victimSecret);
    await victimServes(a);
  });
});
