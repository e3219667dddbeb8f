import { describe, expect, it } from 'vitest';
import { gitNetwork } from '../../../src/services/control-plane/builds/step-network.ts';

const pasta = { mode: 'pasta', allow: ['10.9.0.0/16'] } as const;

describe("a git step's network", () => {
  it('none for a local repository; the namespace, with the admitted private address allowed, for a pinned one', async () => {
    expect(await gitNetwork(pasta, '/srv/repo', true, null)).toEqual({ mode: 'none', allow: [] });
    expect(await gitNetwork(pasta, 'https://git.example/r', false, 'git.example:443:203.0.113.7')).toEqual({
      mode: 'pasta',
      allow: ['10.9.0.0/16', '203.0.113.7/32'],
    });
    expect(await gitNetwork(pasta, 'https://10.1.2.3/r', false, null)).toEqual({
      mode: 'pasta',
      allow: ['10.9.0.0/16', '10.1.2.3/32'],
    });
  });

  it("the host's network only for loopback or IPv6 (a namespace cannot reach them), or when the host has no namespace", async () => {
    expect((await gitNetwork(pasta, 'http://127.0.0.1:8080/r', false, null)).mode).toBe('host');
    expect((await gitNetwork(pasta, 'https://git.example/r', false, 'git.example:443:[2001:db8::1]')).mode).toBe(
      'host',
    );
    const host = { mode: 'host', allow: [] } as const;
    expect(await gitNetwork(host, '/srv/repo', true, null)).toBe(host);
  });
});
