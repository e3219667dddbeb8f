import { execFile } from 'node:child_process';
import { closedPort } from '../helpers/upstream.ts';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';

/** Runs `gateway ...` in-process and captures what it prints. */
async function gateway(...argv: string[]) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(argv, { log: (l) => stdout.push(l), err: (l) => stderr.push(l) });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

describe('gateway check', () => {
  it('passes the shipped rule files', async () => {
    const r = await gateway('check', 'rules/us.yaml', 'rules/eu.yaml');
    expect(r.stdout).toContain('rules/us.yaml: 22 rules, 5 guards, no findings');
    expect(r.stdout).toContain('rules/eu.yaml: 22 rules, 5 guards, no findings');
    expect(r.code).toBe(0);
  });

  it('finds the shadowing in the seed table read in document order', async () => {
    const r = await gateway('check', 'test/fixtures/seed-order.yaml');
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n');
    const stats = lines.find((l) => l.includes('rule "runs-stats"'));
    expect(stats).toMatch(
      /^test\/fixtures\/seed-order\.yaml:\d+: rule "runs-stats": shadowed: never decides: earlier rule "default-api-key"/,
    );
    const download = lines.find((l) => l.includes('rule "public-download"'));
    expect(download).toMatch(/partly-shadowed: .*"default-api-key".*x-api-key.*"default-user".*x-user-id/);
    // Only those two: the catch-all after the defaults is the intended fallback.
    expect(lines.filter((l) => /shadowed/.test(l))).toHaveLength(2);
  });

  it('reports invalid files with file, line and reason, exit 1', async () => {
    const r = await gateway('check', 'test/fixtures/duplicate-id.yaml');
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^test\/fixtures\/duplicate-id\.yaml:\d+: invalid: .*duplicate id/m);
  });

  it('exits 2 on a file it cannot read, and still reports the others', async () => {
    const r = await gateway('check', 'rules/us.yaml', 'no/such/file.yaml');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no/such/file.yaml: cannot read');
    expect(r.stdout).toContain('rules/us.yaml: 22 rules, 5 guards, no findings');
  });

  it('exits 2 without files', async () => {
    expect((await gateway('check')).code).toBe(2);
  });
});

describe('gateway explain', () => {
  const explainJson = async (...argv: string[]) => {
    const r = await gateway('explain', ...argv, '--json');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as {
      rule: string | null;
      normalized_path: string;
      limits: { by: string; count: number; per_seconds: number; category: string; key: string; policy: string }[];
      passed_over: { rule: string; reason: string }[];
      guards: { guard: string; by: string; concurrent?: number; until?: string; key: string }[];
    };
  };

  it('POST /runs/query with key and user: both buckets, digested keys', async () => {
    const r = await explainJson(
      'POST',
      '/runs/query',
      '-H',
      'x-api-key: secret-key-123',
      '-H',
      'x-user-id: alice',
      '--ip',
      '10.0.0.1',
    );
    expect(r.rule).toBe('runs-query');
    expect(r.limits.map(({ by, count, per_seconds, category }) => ({ by, count, per_seconds, category }))).toEqual([
      { by: 'api-key', count: 15, per_seconds: 10, category: 'Run query (API)' },
      { by: 'user-ip', count: 300, per_seconds: 10, category: 'Run query (User)' },
    ]);
    expect(r.limits[0]!.key).toMatch(/^rl:us:runs-query:api-key:[A-Za-z0-9_-]{22}$/);
    expect(r.limits[1]!.key).toMatch(/^rl:us:runs-query:user-ip:[A-Za-z0-9_-]{22}$/);
    const all = JSON.stringify(r);
    for (const raw of ['secret-key-123', 'alice', '10.0.0.1']) expect(all).not.toContain(raw);
    expect(r.passed_over.map((p) => p.rule)).toContain('auth');
    expect(r.passed_over.find((p) => p.rule === 'runs-batch')!.reason).toMatch(/fits none of: path \/runs\/batch/);
  });

  it('GET /runs/stats with a key: runs-stats, region-specific count', async () => {
    expect((await explainJson('GET', '/runs/stats', '-H', 'x-api-key: k')).limits[0]!.count).toBe(1);
    const eu = await explainJson('GET', '/runs/stats', '-H', 'x-api-key: k', '--region', 'eu');
    expect(eu.rule).toBe('runs-stats');
    expect(eu.limits[0]!.count).toBe(20);
    expect(eu.limits[0]!.key).toMatch(/^rl:eu:runs-stats:api-key:/);
  });

  it('shows the shipped in-flight guards on a run-starting endpoint, whatever rule decides it', async () => {
    const thread = '/threads/0b5c2f6e-8f5a-4c1e-9d3b-2a7e4f6c8d10/runs/stream';
    const r = await explainJson('POST', thread, '-H', 'x-api-key: k', '-H', 'x-user-id: u');
    expect(r.rule).toBe('default');
    const inFlight = r.guards.filter((g) => g.until !== undefined);
    expect(inFlight).toMatchObject([
      { guard: 'runs-in-flight-per-key', by: 'api-key', concurrent: 100, until: 'run' },
      { guard: 'runs-in-flight-per-user', by: 'user-ip', concurrent: 10, until: 'run' },
      { guard: 'runs-in-flight-per-ip', by: 'ip', concurrent: 100, until: 'run' },
    ]);
    expect(inFlight[0]!.key).toMatch(/^rl:us:guard\.runs-in-flight-per-key\.in-flight:api-key:/);
    const text = (await gateway('explain', 'POST', '/runs/stream', '-H', 'x-api-key: k')).stdout;
    expect(text).toContain(
      'guard.runs-in-flight-per-key: 100 in flight (a slot held until the run the response starts ends)',
    );
    const get = await explainJson('GET', thread, '-H', 'x-api-key: k');
    expect(get.guards.map((g) => g.guard)).toEqual(['per-ip']);
  });

  it('explains why a rule was passed over for lack of identity', async () => {
    const r = await explainJson('GET', '/repos');
    expect(r.rule).toBe('public');
    expect(r.passed_over.find((p) => p.rule === 'repos')!.reason).toMatch(
      /carries none of its identities \(api-key, user-ip\)/,
    );
    expect(r.passed_over.find((p) => p.rule === 'default')!.reason).toMatch(/carries none/);
  });

  it('normalises the path before matching', async () => {
    const r = await explainJson('POST', '/runs/%2e%2e/runs/query?x=1', '-H', 'x-api-key: k');
    expect(r.normalized_path).toBe('/runs/query');
    expect(r.rule).toBe('runs-query');
  });

  it("a deployment's path is matched as the deployment sees it: {url}/runs/query is runs-query", async () => {
    const r = await explainJson('POST', '/deployments/d-1/runs/query', '-H', 'x-api-key: k');
    expect(r.normalized_path).toBe('/runs/query');
    expect(r.rule).toBe('runs-query');
    expect((r as unknown as { deployment: string }).deployment).toBe('d-1');
  });

  it('--websocket: an upgrade meets the websocket rule; the work commands inside count as POST /threads/{id}/commands', async () => {
    const r = await explainJson('GET', '/threads/t-1/stream/events', '-H', 'x-api-key: k', '--websocket');
    expect(r.rule).toBe('websocket');
    expect(r.limits.map((l) => l.policy)).toEqual(['websocket.api-key']);
    expect((r as unknown as { websocket: unknown }).websocket).toMatchObject({
      refused: null,
      commands_as: 'POST /threads/t-1/commands',
      commands_rule: 'default',
      commands_limits: [
        { policy: 'default.api-key', count: 1000 },
        { policy: 'guard.per-ip' },
        { policy: 'guard.runs-in-flight-per-key', concurrent: 100, until: 'run' },
        { policy: 'guard.runs-in-flight-per-ip', concurrent: 100, until: 'run' },
      ],
    });
    const text = await gateway('explain', 'GET', '/threads/t-1/stream/events', '-H', 'x-api-key: k', '--websocket');
    expect(text.stdout).toContain('each run.start, input.respond command inside counts as POST /threads/t-1/commands');
    expect(text.stdout).toContain('socket closes with 4429');
    const elsewhere = await gateway('explain', 'GET', '/other', '--websocket');
    expect(elsewhere.stdout).toContain('messages inside the socket are piped, not counted');
    const post = await gateway('explain', 'POST', '/threads/t-1/stream/events', '--websocket');
    expect(post.stdout).toContain('refused: a WebSocket upgrade must be a GET');
  });

  it('prints a readable trace without --json', async () => {
    const r = await gateway('explain', 'GET', '/runs/not-a-uuid', '-H', 'x-api-key: k');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /pass {2}run-lookup \(line \d+\): path \/runs\/not-a-uuid fits none of: template \/runs\/\{uuid\}/,
    );
    expect(r.stdout).toMatch(/==> {3}default \(line \d+\)/);
    expect(r.stdout).toContain('default.api-key: 1000 per 10s, by api-key, category "Default (API key)"');
  });

  it('rejects a bad region, a bad header and a malformed path with exit 2', async () => {
    expect((await gateway('explain', 'GET', '/x', '--region', 'mars')).code).toBe(2);
    expect((await gateway('explain', 'GET', '/x', '-H', 'nocolon')).code).toBe(2);
    const bad = await gateway('explain', 'GET', '/x%zz');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/invalid percent-encoding/);
  });

  it('refuses what the edge refuses before matching: a backslash in the path, a target that is not a path', async () => {
    const backslash = await gateway('explain', 'GET', '/runs\\query');
    expect(backslash.code).toBe(2);
    expect(backslash.stderr).toMatch(/the edge answers 400 invalid_path: backslash in the path/);
    expect((await gateway('explain', 'GET', 'runs/query')).stderr).toMatch(/unsupported request target/);
    // A backslash in the query is data; the absolute form is taken as the edge takes it.
    expect((await gateway('explain', 'GET', '/runs/query?q=a\\b', '--json')).code).toBe(0);
    const absolute = await gateway('explain', 'POST', 'http://edge.test/runs/query', '-H', 'x-api-key: k', '--json');
    expect((JSON.parse(absolute.stdout) as { rule: string }).rule).toBe('runs-query');
  });
});

describe('the gateway program', () => {
  it('runs as a bin and returns the exit status', async () => {
    const run = promisify(execFile);
    const ok = await run(process.execPath, ['bin/gateway.js', 'check', 'rules/us.yaml']);
    expect(ok.stdout).toContain('no findings');
    await expect(
      run(process.execPath, ['bin/gateway.js', 'check', 'test/fixtures/seed-order.yaml']),
    ).rejects.toMatchObject({ code: 1 });
  });

  it('start with the bundled services and a Redis that refuses connections exits 2 at once, naming REDIS_URL, password hidden', async () => {
    const run = promisify(execFile);
    const port = await closedPort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      REDIS_URL: `redis://user:hunter2@127.0.0.1:${port}`,
      PORT: '0',
      ADMIN_PORT: '0',
      LOG_LEVEL: 'silent',
    };
    for (const name of ['AGENT_SERVER_URL', 'CONTROL_PLANE_URL', 'REDIS_CLUSTER_NODES']) delete env[name];
    const failed = await run(process.execPath, ['bin/gateway.js', 'start'], { env, timeout: 20_000 }).then(
      () => null,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain(
      `gateway start: REDIS_URL: the bundled services keep their state in Redis and could not reach redis://user:***@127.0.0.1:${port}`,
    );
    expect(failed?.stderr).toContain('ECONNREFUSED');
    expect(failed?.stderr).not.toContain('hunter2');
    expect(failed?.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
});
