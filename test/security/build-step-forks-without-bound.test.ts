import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "builds are not bounded" (issue 34, attack 6, processes): with `"install_scripts": true` a `preinstall`
 * reached 407 processes (the host allowed 96,364), in no cgroup and under no rlimit, for up to INSTALL_TIMEOUT_SECONDS.
 * Now each build step runs in a cgroup of its own (BUILD_MAX_PIDS): the fork loop gets no further than the bound, the
 * step is killed the moment a fork is refused, its build fails with one line naming the bound, and the victim of
 * another organisation serves on. The script here stops by itself at 300 processes (each a `sleep`), so on a gateway
 * without the bound the test fails without forking without end.
 */
const MARK = `fork-${randomBytes(6).toString('hex')}`;
const PIDS = 64;
const FORKER = `
const { spawn } = require('node:child_process');
let n = 0;
const next = () => {
  if (n++ >= 300) return setTimeout(() => process.exit(0), 3000);
  const c = spawn('/bin/sh', ['-c', 'sleep 20', '${MARK}'], { stdio: 'ignore' });
  c.on('error', () => {});
  setImmediate(next);
};
next();
`;

/** The pids of the fork loop's processes now on this host (their command line carries MARK). */
function forkedPids(): number[] {
  try {
    return execFileSync('pgrep', ['-f', MARK], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep answers 1 when none
  }
}
const forked = () => forkedPids().length;

let a: Attack;
beforeAll(async () => {
  const app = hostileApp('', 'return text;');
  app['langgraph.json'] = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, install_scripts: true });
  app['package.json'] = JSON.stringify({ name: 'forker', private: true, scripts: { preinstall: 'node fork.cjs' } });
  app['fork.cjs'] = FORKER;
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, forked())), 100);
  try {
    a = await hostileNextToVictim(app, { BUILD_MAX_PIDS: String(PIDS), INSTALL_TIMEOUT_SECONDS: '60' });
  } finally {
    clearInterval(sampler);
  }
  peak = most;
}, 180_000);
let peak = 0;
afterAll(async () => {
  await a?.close();
  // Only this test's own, by pid (found by their unique marker), should a gateway without the bound leave any.
  for (const pid of forkedPids()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe('a preinstall that forks without bound', { timeout: 60_000 }, () => {
  it('fails its build naming the bound, with the fork loop held under it', async () => {
    expect(a.hostile.status).toBe('BUILD_FAILED');
    expect(a.hostile.message).toBe(`BUILD_FAILED: npm install: too many processes (over its ${PIDS})`);
    expect(peak).toBeLessThanOrEqual(PIDS);
  });

  it('leaves none of its processes behind, and the other organisation serves', async () => {
    expect(forked()).toBe(0);
    await victimServes(a);
  });
});
