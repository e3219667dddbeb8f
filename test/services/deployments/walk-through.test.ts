import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployClient } from '../../../examples/deploy-client.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { makeRepo } from '../control-plane/helpers.ts';

/**
 * Issue 28, "the walk-through is literal": the deployments walk-through of docs/control-plane.md, run as written.
 * Its bash block and its walk.ts are taken from the page; only the first line's placeholders (the key, the gateway's
 * address) are given this test's values. The gateway is `npm start`'s: memory store, a development setup.
 */

const ROOT = resolve(import.meta.dirname, '../../..');
const PAGE = join(ROOT, 'docs/control-plane.md');
const FIRST_LINE = 'KEY=gwk_...; WS=default; GW=http://localhost:8080';

/** The fenced blocks of the page's walk-through section, by language. */
function walkThrough(): { bash: string; ts: string } {
  const text = readFileSync(PAGE, 'utf8');
  const section = text.slice(
    text.indexOf('### Walk-through'),
    text.indexOf('\n### ', text.indexOf('### Walk-through') + 1),
  );
  const block = (lang: string) => {
    const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section);
    if (!m) throw new Error(`no ${lang} block in the walk-through`);
    return m[1]!;
  };
  return { bash: block('bash'), ts: block('ts') };
}

let gw: TestGateway;
let cwd: string;

beforeAll(async () => {
  gw = await startTestGateway({ NODE_ENV: 'development' });
  // The checkout as the reader has it: examples/ at hand, walk.ts saved beside it, node_modules found upwards.
  cwd = mkdtempSync(join(ROOT, '.walk-through-'));
  symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
});

afterAll(async () => {
  await gw?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

function bash(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      'bash',
      ['-euo', 'pipefail', '-c', script],
      { cwd, env: process.env, timeout: 150_000 },
      (err, stdout, stderr) => done({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

describe('the deployments walk-through of docs/control-plane.md', () => {
  it('runs as written: creates the app repository, deploys it, calls it with its x-api-key and the SDK, deletes it', async () => {
    const { bash: script, ts } = walkThrough();
    expect(script.startsWith(FIRST_LINE)).toBe(true);
    const key = (await gw.gateway.keys!.createKey('default')).key;
    writeFileSync(join(cwd, 'walk.ts'), ts);
    const r = await bash(script.replace(FIRST_LINE, `KEY=${key}; WS=default; GW=${gw.url}`));
    expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(0);
    const lines = r.stdout.trim().split('\n');
    // 1. create: $ID and $REV from `id` and `latest_revision_id`
    const [, id, rev] = /^deployment (\S+) revision (\S+)$/.exec(lines[0]!) ?? [];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(rev).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines.slice(1)).toEqual([
      'DEPLOYED null', // 2. polled until DEPLOYED
      `${gw.url.replace('127.0.0.1', 'localhost')}/deployments/${id}`, // 3. its url
      '401', // the app's own handler: no x-api-key, refused
      'agent', // with it: its graph
      'hi', // 4. the SDK's run: the input, then the answer
      expect.stringMatching(/^hello key-[0-9a-f]{12}: hi$/),
      '204', // 5. deleted
      `Deployment ${id} not found`,
    ]);
  }, 180_000);

  it('examples/deploy-client.ts deploys the same app, sending the x-api-key its handler wants (--secret, --header)', async () => {
    const app = join(ROOT, 'examples/api-key-app');
    const files = Object.fromEntries(
      ['langgraph.json', 'auth.ts', 'graph.ts'].map((f) => [f, readFileSync(join(app, f), 'utf8')]),
    );
    const repo = makeRepo(files);
    const key = (await gw.gateway.keys!.createKey('default')).key;
    const run = async (extra: string[]) => {
      const out: string[] = [];
      const code = await deployClient(
        [
          '--url',
          gw.url,
          '--api-key',
          key,
          '--tenant-id',
          'default',
          '--repo-url',
          repo.dir,
          '--poll-interval',
          '1',
          ...extra,
        ],
        {},
        { log: (l) => out.push(l), err: (l) => out.push(l) },
      );
      return { code, out: out.join('\n') };
    };
    try {
      const ok = await run(['--secret', 'APP_API_KEYS=app-key-1', '--header', 'x-api-key: app-key-1']);
      expect(ok.code, ok.out).toBe(0);
      expect(ok.out).toMatch(/called graph=agent answer="hello key-[0-9a-f]{12}: hello"/);
      // Without the header the app's own handler refuses the control plane's key: exit 4, saying so.
      const refused = await run(['--secret', 'APP_API_KEYS=app-key-1']);
      expect(refused.code).toBe(4);
      expect(refused.out).toMatch(/Invalid x-api-key/);
      expect(ok.out + refused.out).not.toContain('app-key-1');
    } finally {
      repo.remove();
    }
  }, 180_000);
});
