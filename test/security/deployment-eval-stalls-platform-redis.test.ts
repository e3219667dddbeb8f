import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';
import { FIND_REDIS, privateRedis } from './fixtures/redis-from-app.ts';

/**
 * Issue 34, "One EVAL stops the platform's Redis": a deployment's Redis user
 * could run scripts (for its item store), so app code, with what it found of
 * its Redis, sent `EVAL "while true do end" 0`: Redis answered BUSY to
 * everyone until an operator's SCRIPT KILL, and every other tenant's valid
 * key answered 401. Now the user has no EVAL/EVALSHA (the item store calls
 * functions the platform loads): the script is refused, Redis stays free.
 */
const DATA = 'evaldata';
let r: Awaited<ReturnType<typeof privateRedis>>;
let a: Attack;

beforeAll(async () => {
  // BUSY after 500 ms rather than 5 s: the stall shows sooner; the attack is the same.
  r = await privateRedis(['--busy-reply-threshold', '500']);
  const node = `
    const f = await findRedis('${DATA}', ${r.server.port});
    const c = await openRedis(f);
    const replies = [
      await c.cmd(['EVAL', 'while true do end', '0'], 1500),
      await c.cmd(['EVALSHA', 'a'.repeat(40), '0'], 1500),
      await c.cmd(['FUNCTION', 'LOAD', "#!lua name=evil\\nredis.register_function('evil', function() while true do end end)"], 1500),
      await c.cmd(['FCALL', 'evil', '0'], 1500),
    ];
    c.close();
    return JSON.stringify(replies);
  `;
  a = await hostileNextToVictim(hostileApp(FIND_REDIS, node), { REDIS_URL: r.url, DEPLOYMENT_DATA_PREFIX: DATA });
  expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
}, 240_000);

afterAll(async () => {
  await r?.admin.call('SCRIPT', 'KILL').catch(() => {});
  await a?.close();
  r?.admin.disconnect();
  await r?.server.stop();
});

describe('a deployment stalls the platform Redis with EVAL', { timeout: 60_000 }, () => {
  it('its scripts are refused, and the platform and the other tenant keep their Redis', async () => {
    const attack = answer(a, a.hostile);
    await new Promise((resolve) => setTimeout(resolve, 800)); // while the attack runs, or after it was refused
    const fresh = new Redis(r.url, { maxRetriesPerRequest: 0, connectTimeout: 2000 });
    fresh.on('error', () => {});
    try {
      const t0 = Date.now();
      expect(await fresh.ping().catch((e: Error) => e.message)).toBe('PONG');
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      fresh.disconnect();
    }
    await victimServes(a); // its key check (in Redis) answers: no 401
    const replies = JSON.parse(await attack) as string[];
    for (const reply of replies) expect(reply).toMatch(/^-(NOPERM|ERR Function not found)/);
    expect(replies[0]).toMatch(/NOPERM/);
    expect(await r.admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'evil')).toEqual([]);
  });
});
