import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeSandbox } from '../../../../../src/services/revision-host/local/sandbox/probe.ts';
import { runCommand } from '../../../../../src/services/control-plane/builds/run-command.ts';

/**
 * What a command sees in the sandbox (the machine's bwrap, through
 * runCommand's `sandbox` option, the way a revision or a build step runs):
 * no other process, none of the gateway's environment or files, its own
 * folder, HOME and /tmp writable and nothing else, the network as the host's.
 */
let dir: string;
let outside: string;
let server: Server;
let port: number;
beforeAll(async () => {
  expect(probeSandbox('auto')).toEqual({ mode: 'bwrap', why: null });
  dir = mkdtempSync(join(tmpdir(), 'sandbox-dir-'));
  outside = mkdtempSync(join(tmpdir(), 'sandbox-outside-'));
  writeFileSync(join(outside, 'secret'), 'gateway file');
  server = createServer((_req, res) => res.end('egress ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

const inSandbox = (script: string) =>
  runCommand('/bin/sh', ['-c', script], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', HOME: '/home/sandbox' },
    timeoutMs: 20_000,
    sandbox: {},
  });

describe('the bubblewrap sandbox', { timeout: 30_000 }, () => {
  it('shows no other process: its shell is among the first pids of its own namespace', async () => {
    const r = await inSandbox('ls /proc | grep -E "^[0-9]+$" | wc -l; echo $$');
    const [count, pid] = r.stdout.trim().split('\n').map(Number);
    // bwrap's init, the shell and the pipeline's three commands
    expect(count).toBeLessThanOrEqual(6);
    expect(pid).toBeLessThanOrEqual(3);
  });

  it("has only the environment it was given, and can read no gateway's file", async () => {
    process.env.SANDBOX_TEST_MARKER = 'gateway-only';
    const r = await inSandbox(`env; cat ${outside}/secret 2>&1; ls /work /root 2>&1; cat /proc/1/environ`);
    delete process.env.SANDBOX_TEST_MARKER;
    expect(r.stdout).not.toContain('gateway-only');
    expect(r.stdout).not.toContain('gateway file');
    expect(r.stdout).toMatch(/No such file or directory/);
  });

  it('writes its folder, HOME and /tmp, and nothing of the system', async () => {
    const r = await inSandbox(
      'echo a > ./own && echo b > ~/h && echo c > /tmp/t && echo ok; ' +
        'for f in /usr/x /etc/x /etc/hosts /x; do (echo y > $f) 2>/dev/null && echo "wrote $f"; done; true',
    );
    expect(r.stdout.trim()).toBe('ok');
  });

  it('reaches the network as the host does (egress keeps working)', async () => {
    const r = await runCommand(
      process.execPath,
      ['-e', `fetch('http://127.0.0.1:${port}').then(r=>r.text()).then(console.log)`],
      {
        cwd: dir,
        env: { PATH: '/usr/bin:/bin' },
        timeoutMs: 20_000,
        sandbox: {},
      },
    );
    expect(r.stdout.trim()).toBe('egress ok');
  });
});
