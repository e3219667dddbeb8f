import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "one IPC message stops the gateway": `process.send(null)` from app
 * code threw in the revision host's message handler (`m.type` of null) and the
 * gateway exited, during the app's own load check. Now the app has no Node IPC
 * channel at all, and whatever it writes on the control channel (fd 3) is
 * checked and ignored when it is not a message of the protocol.
 */
const SEND_GARBAGE = `
(process as any).send?.(null);
(process as any).send?.('garbage');
(process as any).send?.({ type: 'verify', id: 'x', key: 42 });
try { fs.writeSync(3, 'null\\n"garbage"\\n{"type":"verify","id":1}\\n[1,2]\\n' + 'x'.repeat(200_000) + '\\n'); } catch {}
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp(SEND_GARBAGE, 'return "still here";'));
}, 240_000);
afterAll(() => a?.close());

describe('app code sends null and garbage to the gateway', { timeout: 60_000 }, () => {
  it('the gateway stays up, the garbage is logged (counted) and ignored, both deployments serve', async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    expect(a.t.logs.lines().some((l) => String(l.msg).startsWith('revision messages ignored'))).toBe(true);
    await victimServes(a);
  });
});
