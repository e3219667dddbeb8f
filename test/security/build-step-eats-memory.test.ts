import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "builds are not bounded" (issue 34, attack 6, memory): a `preinstall` held 1.5 GiB, in no cgroup. Now each
 * build step runs in a cgroup of its own with BUILD_MEMORY_MB: the script is killed at the bound, the build fails with
 * one line saying so (not npm's own words about a signal), and the victim of another organisation serves on. The
 * script stops by itself at 1.5 GiB, so without the bound the test fails without exhausting the host.
 */
const HOG = `
const held = [];
for (let i = 0; i < 24; i++) held.push(Buffer.alloc(64 * 1024 * 1024, 1));
setTimeout(() => process.exit(0), 2000);
`;
const MEMORY_MB = 256;

let a: Attack;
beforeAll(async () => {
  const app = hostileApp('', 'return text;');
  app['langgraph.json'] = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, install_scripts: true });
  app['package.json'] = JSON.stringify({ name: 'hog', private: true, scripts: { preinstall: 'node hog.cjs' } });
  app['hog.cjs'] = HOG;
  a = await hostileNextToVictim(app, { BUILD_MEMORY_MB: String(MEMORY_MB), INSTALL_TIMEOUT_SECONDS: '60' });
}, 180_000);
afterAll(() => a?.close());

describe('a preinstall that eats memory', { timeout: 60_000 }, () => {
  it('fails its build with the bound in one line', () => {
    expect(a.hostile.status).toBe('BUILD_FAILED');
    expect(a.hostile.message).toBe(`BUILD_FAILED: npm install: out of memory (over its ${MEMORY_MB} MiB)`);
  });

  it('the other organisation serves', async () => {
    await victimServes(a);
  });
});
