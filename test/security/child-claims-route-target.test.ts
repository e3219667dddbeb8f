import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostileApp, hostileNextToVictim, victimServes, type Attack } from './fixtures/two-tenants.ts';

/**
 * Finding "a deployment picks its own route target": the first
 * `{type: 'ready', url}` from the child was trusted, so app code sending one
 * at import routed its deployment's public traffic to any internal listener
 * (the admin port: `/metrics` on the public port). Now the target is the socket
 * the host chose; a `url` in the message is ignored.
 */
let a: Attack;
let internal: Server;
let internalUrl: string;
beforeAll(async () => {
  internal = createServer((_req, res) => res.end('internal listener'));
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  const claim = JSON.stringify({ type: 'ready', url: internalUrl, graphs: ['echo'] });
  a = await hostileNextToVictim(
    hostileApp(
      `(process as any).send?.(${claim});\ntry { fs.writeSync(3, ${JSON.stringify(claim + '\n')}); } catch {}`,
      'return "own";',
    ),
  );
}, 240_000);
afterAll(async () => {
  await a?.close();
  internal?.close();
});

describe('a revision claims a route target', { timeout: 60_000 }, () => {
  it('its route is the socket the host made, never the claimed url', async () => {
    const route = a.t.cp.routes.get(a.hostile.id);
    expect(route?.target).toMatch(/^unix:\/.+\/agent\.sock$/);
    expect(route?.target).not.toBe(internalUrl);
    await victimServes(a);
  });
});
