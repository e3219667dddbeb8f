import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "other tenants' builds": every build folder was writable by every
 * revision (`<work>/<region>/<deployment>/<revision>`, found by walking up
 * from its own folder), so appending to another deployment's graph and
 * killing its process made the restart run the attacker's code with the
 * victim's secrets. In the sandbox only the revision's own folder is there.
 */
const APPEND_TO_OTHERS = `
  const own = process.cwd();
  const region = path.dirname(path.dirname(own));
  let written = 0;
  try {
    for (const d of fs.readdirSync(region)) for (const r of fs.readdirSync(path.join(region, d))) {
      const file = path.join(region, d, r, 'graph.ts');
      if (file === path.join(own, 'graph.ts')) continue;
      try { fs.appendFileSync(file, '\\n// owned\\n'); written++; } catch {}
    }
  } catch {}
  return String(written);
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp('', APPEND_TO_OTHERS));
}, 240_000);
afterAll(() => a?.close());

describe("a tenant writes another deployment's build", { timeout: 60_000 }, () => {
  it("writes nothing outside its folder; the victim's graph is unchanged", async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    expect(await answer(a, a.hostile)).toBe('0');
    const victimDir = join(a.t.workDir, 'us', a.victim.id);
    for (const rev of readdirSync(victimDir))
      expect(readFileSync(join(victimDir, rev, 'graph.ts'), 'utf8')).not.toContain('owned');
    await victimServes(a);
  });
});
