import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { targetSocketPath } from '../../src/proxy/socket-target.ts';
import { eventually } from '../services/control-plane/helpers.ts';
import { ask } from '../services/deployments/helpers.ts';
import { answer, hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "a dead port handed to the attacker" (issue 34, Why 5): a revision served on a loopback port; when its
 * process died, an attacker's process waiting with `listen()` in a loop took the port, and the victim's requests (its
 * `x-api-key`, its bearer token) reached the attacker while the route still pointed there. Now a revision serves on a
 * Unix socket the host makes in a folder of its own, never mounted into another sandbox, and a new one for each
 * process: the attacker can neither see nor bind it, and no port is involved. (A route change that Redis fails to
 * write applies locally at once: test/routing/redis-route-table.test.ts.)
 */
const SQUAT = `
const net = await import('node:net');
const { path, ports } = JSON.parse(text) as { path: string; ports: number[] };
const tried: string[] = [];
const listenOn = (o: object) => new Promise<string>((resolve) => {
  const server = net.createServer((c) => c.end('HTTP/1.1 200 OK\\r\\ncontent-length: 8\\r\\n\\r\\nhijacked'));
  server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  server.listen(o, () => resolve('listening'));
});
tried.push(await listenOn({ path }));
for (const port of ports) tried.push(await listenOn({ port, host: '127.0.0.1' }));
return JSON.stringify(tried);
`;

let a: Attack;
beforeAll(async () => {
  a = await hostileNextToVictim(hostileApp('', SQUAT));
}, 240_000);
afterAll(async () => {
  await a?.close();
});

describe("a dead revision's address taken by another tenant", { timeout: 120_000 }, () => {
  it("the attacker cannot bind the victim's socket; after the victim's process dies its traffic never reaches the attacker", async () => {
    expect(a.hostile.status, a.hostile.message ?? '').toBe('DEPLOYED');
    const before = a.t.cp.routes.get(a.victim.id)!.target;
    const path = targetSocketPath(before)!;
    // The squat is in place before the victim dies: the socket's path, and loopback ports (of its own namespace).
    const tried = JSON.parse(await answer(a, a.hostile, JSON.stringify({ path, ports: [18080, 28080] }))) as string[];
    expect(tried[0]).toMatch(/^(ENOENT|EACCES|EROFS)$/);

    const pid = a.t.cp.serving!.current(a.victim.id)!.proc!.pid!;
    process.kill(pid, 'SIGKILL');
    // While it is down and restarting, nothing the victim is sent is answered by the attacker.
    const answers: string[] = [];
    for (let i = 0; i < 25; i++) {
      const route = a.t.cp.routes.get(a.victim.id);
      if (route && route.unavailable === undefined)
        answers.push(await ask(route.target, a.victim.tenant, 'go').catch((e: Error) => e.message));
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(answers.join('\n')).not.toContain('hijacked');
    await eventually(async () => {
      const route = a.t.cp.routes.get(a.victim.id);
      return route?.unavailable === undefined && route?.target !== before ? route : null;
    }, 30_000);
    // A new process, a new socket; the old one is gone with its folder.
    expect(a.t.cp.routes.get(a.victim.id)!.target).not.toBe(before);
    await victimServes(a);
  });
});
