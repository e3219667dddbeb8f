import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, eventually } from '../services/control-plane/helpers.ts';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "memory_mb bounds only the V8 heap": Buffers live outside it (545 MB
 * at memory_mb 64). Now the process's group (or RLIMIT_DATA) bounds all of its
 * memory: a revision over it is stopped, the deployment shows why, and its
 * neighbour and the gateway go on.
 */
const GROW = `
  const held: Buffer[] = [];
  for (let i = 0; i < 2048; i++) held.push(Buffer.alloc(1 << 20, 1));
  return String(held.length);
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp('', GROW), { DEPLOYMENT_MEMORY_MB: '64' });
}, 240_000);
afterAll(() => a?.close());

describe('a revision allocates Buffers past its memory', { timeout: 150_000 }, () => {
  it('is stopped with an out-of-memory reason, shown as serving_error once it keeps happening; the victim serves', async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    await expect(answer(a, a.hostile)).rejects.toThrow();
    const crash = await a.t.logs.waitFor(
      (l) => l.msg === 'revision process stopped unexpectedly; restarting' && l.deploymentId === a.hostile.id,
      30_000,
    );
    expect(String(crash.reason)).toMatch(/out of memory/);
    await victimServes(a);
    const api = client(a.t.url, a.hostile.tenant);
    const shown = await eventually(
      async () => {
        await answer(a, a.hostile).catch(() => '');
        const d = (await api.get(`/deployments/${a.hostile.id}`)).json;
        return typeof d.serving_error === 'string' ? (d.serving_error as string) : null;
      },
      100_000,
      'serving_error shown',
    );
    expect(shown).toMatch(/out of memory/);
    await victimServes(a);
  });
});
