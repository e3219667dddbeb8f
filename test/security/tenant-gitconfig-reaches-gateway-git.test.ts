import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "shared HOME": a revision inherited the gateway's HOME, so a
 * `~/.gitconfig` (a `filter` dumping the environment, `url.<x>.insteadOf`) or
 * `~/.npmrc` it wrote was read by the gateway's own git and npm. Now its HOME
 * is its own (a tmpfs in the sandbox; a folder per revision without it).
 */
const WRITE_GITCONFIG = `
  const home = os.homedir();
  try {
    fs.writeFileSync(path.join(home, '.gitconfig'), '[url "file:///attacker/"]\\n\\tinsteadOf = https://github.com/\\n');
    fs.writeFileSync(path.join(home, '.npmrc'), 'registry=http://127.0.0.1:1/\\n');
  } catch {}
  return home;
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp('', WRITE_GITCONFIG));
}, 240_000);
afterAll(() => a?.close());

describe("a tenant writes the gateway's ~/.gitconfig", { timeout: 60_000 }, () => {
  it("its HOME is not the gateway's: the gateway's HOME has no .gitconfig or .npmrc", async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    expect(await answer(a, a.hostile)).not.toBe(a.gatewayHome);
    expect(existsSync(join(a.gatewayHome, '.gitconfig'))).toBe(false);
    expect(existsSync(join(a.gatewayHome, '.npmrc'))).toBe(false);
    await victimServes(a);
  });
});
