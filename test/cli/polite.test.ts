import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir } from '../helpers/gateway.ts';

/**
 * Issue 28, "the CLI and the start are polite": a busy port, an unknown option, `--help`, a closed pipe. Each ran
 * into a stack trace (or started the gateway) before. Run as the real program, as a user meets it.
 */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function gateway(args: string[], env: NodeJS.ProcessEnv = {}, timeout = 30_000): Promise<Run> {
  const base: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', ...env };
  for (const name of ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'CONTROL_PLANE_URL', 'AGENT_SERVER_URL'])
    if (!(name in env)) delete base[name];
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/gateway.js', ...args], { env: base, timeout }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

const noStack = /\n\s+at |Error:|uncaught/;

/** A port held by this test for the whole file: what "8080 is taken" looks like. */
let busy: Server;
let busyPort: number;
beforeAll(async () => {
  busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, () => resolve()));
  busyPort = (busy.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

describe('gateway start with a port in use', () => {
  for (const variable of ['PORT', 'ADMIN_PORT'] as const) {
    it(`${variable} taken: one line naming the port and ${variable}, exit 2, no key printed, nothing started`, async () => {
      const other = variable === 'PORT' ? 'ADMIN_PORT' : 'PORT';
      const r = await gateway(['start'], { [variable]: String(busyPort), [other]: '0', LOG_LEVEL: 'info' });
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(
        `gateway start: ${variable}: port ${busyPort} is already in use: stop what listens on it or set ${variable}`,
      );
      expect(r.stderr).not.toMatch(noStack);
      // Checked before the boot: no development key, no service or deployment log line.
      expect(r.stdout).toBe('');
    });
  }
});

describe('an unknown option', () => {
  for (const args of [
    ['explain', 'GET', '/', '--bogus'],
    ['check', '--bogus'],
    ['start', '--bogus'],
    ['keys', 'create', '--bogus'],
  ]) {
    const command = args[0] === 'keys' ? 'keys create' : args[0]!;
    it(`gateway ${args.join(' ')}: one line naming it and where the usage is, exit 2`, async () => {
      // PORT taken: a start that read --bogus as nothing would fail differently.
      const r = await gateway(args, { PORT: String(busyPort), ADMIN_PORT: '0' });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`gateway ${command}: unknown option --bogus (see gateway ${command} --help)\n`);
      expect(r.stdout).toBe('');
    });
  }

  it('check reads a file named like an option only after --', async () => {
    const r = await gateway(['check', '--', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--bogus: cannot read');
  });
});

describe('--help on every command', () => {
  const cases: [string[], string][] = [
    [['start', '--help'], 'usage: gateway start'],
    [['start', '-h'], 'usage: gateway start'],
    [['check', '--help'], 'usage: gateway check'],
    [['check', '-h', 'rules/us.yaml'], 'usage: gateway check'],
    [['explain', '--help'], 'usage: gateway explain'],
    [['explain', 'GET', '/', '-h'], 'usage: gateway explain'],
    [['keys', '--help'], 'usage: gateway keys create'],
    [['keys', 'create', '--help'], 'usage: gateway keys create'],
    [['--help'], 'usage: gateway <command>'],
  ];
  for (const [args, usage] of cases) {
    it(`gateway ${args.join(' ')} prints its usage and exits 0`, async () => {
      // With PORT taken a start would exit 2: 0 means it printed its usage and never started.
      const r = await gateway(args, { PORT: String(busyPort), ADMIN_PORT: '0', LOG_LEVEL: 'info' });
      // Both at once: a failure shows what the program said.
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(r.stdout.startsWith(usage)).toBe(true);
    });
  }
});

describe('a closed pipe', () => {
  it('gateway explain … | head -0: exits 0 quietly, no stack trace', async () => {
    const child = spawn(process.execPath, ['bin/gateway.js', 'explain', 'GET', '/runs/query'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader goes away before the answer is written: the program's write fails with EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });
});

describe('gateway check reports every problem of a file in one pass', () => {
  it('a duplicate id and a path that is not normalised, together with a schema error', async () => {
    const file = 'test/cli/fixtures/several-problems.yaml';
    const r = await gateway(['check', file]);
    expect(r.code).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([
      `${file}:8: invalid: rule "same": duplicate id (first defined on line 3)`,
      `${file}:9: invalid: rule "same": prefix "/repos/../x" is not a normalised path (requests are matched as "/x")`,
      `${file}:16: invalid: rule "broken": limits[0].count must be at least 1, got -1`,
    ]);
  });
});

describe('gateway start with a YAML syntax error in its rule file', () => {
  it('one line naming where the { opened and where the parser noticed, exit 2', async () => {
    const rules = rulesDir(
      [
        '- id: ok',
        '  limits:',
        '    - { by: ip, count: 100, per: 60s, category: Public }',
        '- id: bad',
        '  match: { method: POST,',
        '           prefix: /auth',
        '  limits:',
        '    - { by: api-key, count: 100, per: 60s, category: Public }',
        '',
      ].join('\n'),
    );
    try {
      const r = await gateway(['start'], { RULES_DIR: rules.dir, REGION: 'us', PORT: '0', ADMIN_PORT: '0' });
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toEqual([
        `gateway start: ${rules.dir}/us.yaml:5: YAML syntax error: the mapping opened at line 5 is not closed by line 7 (Flow map in block collection must be sufficiently indented and end with a })`,
      ]);
      expect(r.stderr).not.toMatch(noStack);
    } finally {
      rules.remove();
    }
  });
});
