import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeNetwork } from '../../src/services/revision-host/local/sandbox/network.ts';
import { installDependencies } from '../../src/services/control-plane/builds/install.ts';
import type { RedisProcess } from '../../support/redis-server.ts';
import { weakHostRedis } from './fixtures/weak-host-redis.ts';

/**
 * Finding "the host's loopback is the tenant's", its build half (issue 34, Why 1 and What to do 1): install scripts
 * (a tenant's code, with `"install_scripts": true`) ran in bubblewrap on the host's network, so a `preinstall`
 * reached every listener on 127.0.0.1 and the host's other addresses. Now every npm step runs in a network namespace
 * of its own, like a revision. The weak service is a password-less redis-server of this test, on 127.0.0.1 and the
 * host's own address.
 */
const PROBE = `
const net = require('net');
const fs = require('fs');
const targets = JSON.parse(process.env.npm_package_config_targets);
Promise.all(targets.map(([host, port]) => new Promise((resolve) => {
  const s = net.connect({ host, port });
  s.setTimeout(2000, () => (s.destroy(), resolve(host + ' timeout')));
  s.on('connect', () => (s.destroy(), resolve(host + ' connected')));
  s.on('error', (e) => resolve(host + ' ' + e.code));
}))).then((r) => fs.writeFileSync('probe.json', JSON.stringify(r)));
`;

let redis: RedisProcess;
let work: string;
let hostAddress: string | undefined;
beforeAll(async () => {
  ({ redis, hostAddress } = await weakHostRedis());
  work = mkdtempSync(join(tmpdir(), 'sec-build-net-'));
});
afterAll(async () => {
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('an install script reaches the host network', { timeout: 120_000 }, () => {
  it("reaches neither the host's loopback nor its other addresses", async () => {
    const network = await probeNetwork('auto', []);
    expect(network.mode, `no network namespace on this host: ${network.why}`).toBe('pasta');
    const dir = join(work, 'app');
    mkdirSync(dir);
    writeFileSync(join(dir, 'probe.js'), PROBE);
    writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: {}, install_scripts: true }));
    const targets = [['127.0.0.1', redis.port], ...(hostAddress ? [[hostAddress, redis.port]] : [])];
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({
        name: 'probe',
        version: '1.0.0',
        config: { targets: JSON.stringify(targets) },
        scripts: { preinstall: 'node probe.js' },
      }),
    );
    await installDependencies(dir, { timeoutMs: 60_000, sandbox: true, network: { mode: network.mode, allow: [] } });
    const results = JSON.parse(readFileSync(join(dir, 'probe.json'), 'utf8')) as string[];
    expect(results).toHaveLength(targets.length);
    for (const r of results) expect(r).not.toMatch(/connected/);
  });
});
