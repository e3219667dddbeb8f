import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "install scripts run as the gateway" (issue 25, attacks 1–3 through the build): with `"install_scripts":
 * true` an app's `postinstall` ran as a plain child of the gateway, so it read `/proc/<pid>/environ` of the gateway
 * and of every revision (another tenant's secrets), walked into other deployments' build folders and wrote there, and
 * wrote into the gateway's own source folder and its tmp. In the sandbox the install sees its own processes only, its
 * own checkout, an empty HOME and a /tmp of its own; the build still succeeds and the victim still serves.
 */
const GATEWAY_SRC = fileURLToPath(new URL('../../', import.meta.url));
const MARK = randomBytes(6).toString('hex');
const OUTSIDE = join(tmpdir(), `owned-by-install-${MARK}`);
const IN_SOURCE = join(GATEWAY_SRC, 'src', `owned-by-install-${MARK}`);

/** The postinstall: tries everything, records what it saw in report.json in its own folder, never fails. */
const EVIL = `
const fs = require('node:fs');
const path = require('node:path');
const tryRead = (f) => { try { return fs.readFileSync(f, 'latin1'); } catch { return null; } };
const tryWrite = (f) => { try { fs.writeFileSync(f, 'owned'); return true; } catch { return false; } };
const report = { environs: '', gatewayEnviron: null, pid1Environ: null, others: [], gatewayFile: null, wrote: [] };
for (const pid of fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)))
  report.environs += (tryRead('/proc/' + pid + '/environ') ?? '') + '\\n';
report.gatewayEnviron = tryRead('/proc/${process.pid}/environ');
report.pid1Environ = tryRead('/proc/1/environ');
const region = path.dirname(path.dirname(process.cwd()));
try {
  for (const d of fs.readdirSync(region)) for (const r of fs.readdirSync(path.join(region, d))) {
    const dir = path.join(region, d, r);
    if (dir === process.cwd()) continue;
    report.others.push(dir);
    try { fs.appendFileSync(path.join(dir, 'graph.ts'), '\\n// owned\\n'); } catch {}
  }
} catch {}
report.gatewayFile = tryRead(${JSON.stringify(join(GATEWAY_SRC, 'package.json'))});
for (const f of [${JSON.stringify(OUTSIDE)}, ${JSON.stringify(IN_SOURCE)}]) if (tryWrite(f)) report.wrote.push(f);
fs.writeFileSync('report.json', JSON.stringify(report));
`;

const HOSTILE = {
  ...hostileApp('', "return 'ok';"),
  'langgraph.json': JSON.stringify({ graphs: { echo: './graph.ts:graph' }, install_scripts: true }),
  'package.json': JSON.stringify({
    name: 'hostile',
    private: true,
    type: 'module',
    scripts: { postinstall: 'node evil.cjs' },
  }),
  'evil.cjs': EVIL,
};

interface Report {
  environs: string;
  gatewayEnviron: string | null;
  pid1Environ: string | null;
  others: string[];
  gatewayFile: string | null;
  wrote: string[];
}

let a: Attack;
let report: Report;
beforeAll(async () => {
  a = await hostileNextToVictim(HOSTILE);
  const folder = join(a.t.workDir, 'us', a.hostile.id, a.hostile.revisionId);
  report = JSON.parse(readFileSync(join(folder, 'report.json'), 'utf8')) as Report;
}, 240_000);
afterAll(async () => {
  await a?.close();
  for (const f of [OUTSIDE, IN_SOURCE]) rmSync(f, { force: true });
});

describe("an install script reads the gateway's and other tenants' files", { timeout: 60_000 }, () => {
  it('the build succeeds with the script run', () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
  });

  it("sees no other process's environment: neither the victim's secret nor the gateway's", () => {
    const gateway = readFileSync('/proc/self/environ', 'latin1');
    expect(report.environs).not.toContain(a.victimSecret);
    expect(report.gatewayEnviron === null || report.gatewayEnviron !== gateway).toBe(true);
    expect(report.pid1Environ === null || !report.pid1Environ.includes(gateway)).toBe(true);
  });

  it("sees no other deployment's build and changes none", () => {
    expect(report.others).toEqual([]);
    const victimDir = join(a.t.workDir, 'us', a.victim.id);
    for (const rev of readdirSync(victimDir))
      expect(readFileSync(join(victimDir, rev, 'graph.ts'), 'utf8')).not.toContain('owned');
  });

  it("reads none of the gateway's files and writes nothing outside its folder", () => {
    expect(report.gatewayFile).toBeNull();
    expect(existsSync(OUTSIDE)).toBe(false);
    expect(existsSync(IN_SOURCE)).toBe(false);
  });

  it('the victim still serves', async () => {
    await victimServes(a);
  });
});
