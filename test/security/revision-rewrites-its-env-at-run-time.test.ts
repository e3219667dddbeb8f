import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../services/control-plane/helpers.ts';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "the build folder at run time" (issue 34, attack 8): the control plane read a revision's `langgraph.json`
 * and `.env` from its build folder at every restart, in the gateway's process. App code added `"env": ".env"` to its
 * own config, wrote a 21 MB `.env` and exited: the gateway grew by 860 MiB, the edge stalled, the start failed
 * (`spawn E2BIG`) and the restart loop did it again every 30 s. Now the build reads the app's env once (bounded) into
 * the revision's record, and every start takes it from there: the restart runs with what was built, the gateway does
 * not grow, and the victim of another organisation serves on. In the sandbox the build folder is read-only as well
 * (the write fails with EROFS); without it (the gateway's own organisation) the record alone holds.
 */
const REWRITE = `
if (text !== 'rewrite') return String(process.env.GREETING);
const dir = process.cwd();
let done = 'rewritten';
try {
  fs.writeFileSync(path.join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.ts:graph' }, env: '.env' }));
  const pad = 'x'.repeat(1024 * 1024);
  let env = 'GREETING=rewritten\\n';
  for (let i = 0; i < 21; i++) env += 'PAD_' + i + '=' + pad + '\\n';
  fs.writeFileSync(path.join(dir, '.env'), env);
} catch (err) {
  done = 'refused ' + (err as NodeJS.ErrnoException).code;
}
setTimeout(() => process.exit(1), 50);
return done;
`;

let a: Attack;
beforeAll(async () => {
  const app = hostileApp('', REWRITE);
  app['langgraph.json'] = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, env: { GREETING: 'built' } });
  a = await hostileNextToVictim(app);
}, 180_000);
afterAll(() => a?.close());

describe('a revision that rewrites its env at run time', { timeout: 90_000 }, () => {
  it('restarts with the env it was built with, and the gateway does not grow', async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    expect(await answer(a, a.hostile, 'hi')).toBe('built');
    const before = process.memoryUsage().rss;
    const first = a.t.cp.routes.get(a.hostile.id)?.target;
    expect(await answer(a, a.hostile, 'rewrite')).toBe('refused EROFS');
    // Restarted (a new target), answering with what its build read.
    const again = await eventually(async () => {
      const route = a.t.cp.routes.get(a.hostile.id);
      if (!route?.target || route.target === first) return null;
      return answer(a, a.hostile, 'hi').catch(() => null);
    }, 45_000).catch((err: unknown) => {
      console.log(
        a.t.logs
          .raw()
          .split('\n')
          .filter((l) => l.includes('restart') || l.includes('stopped'))
          .slice(-8)
          .map((l) => l.slice(0, 600))
          .join('\n'),
      );
      throw err;
    });
    expect(again).toBe('built');
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * 1024 * 1024);
    await victimServes(a);
  });
});
