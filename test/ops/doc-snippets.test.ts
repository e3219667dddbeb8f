import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Issue 35, item 4: every snippet of the README and docs/*.md that runs against a gateway runs here, as written. Such
 * a block is marked in its page by its info string (```` ```sh runnable ````, ```` ```ts runnable ````); this test
 * finds them all (a page that gains one is run without touching this file), gives the gateway's address for
 * `localhost:8080` and a real key for `KEY=gwk_...`, and runs it: shell with `bash -euo pipefail`, TypeScript with
 * tsx, from a folder of the checkout (node_modules found upwards); shell from the checkout's root. The gateway is `npm start`'s (memory store, the
 * example app, US rules) on port 0. The walk-through of docs/control-plane.md has its own test
 * (services/deployments/walk-through.test.ts).
 */

const ROOT = resolve(import.meta.dirname, '../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
);

interface Snippet {
  readonly page: string;
  readonly line: number;
  readonly lang: 'sh' | 'ts';
  readonly code: string;
}

/** The blocks marked runnable, with where they are. */
function runnableSnippets(): Snippet[] {
  const found: Snippet[] = [];
  for (const page of PAGES) {
    const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(\w+) runnable\s*$/.exec(lines[i]!);
      if (!open) continue;
      const end = lines.indexOf('```', i + 1);
      const lang = open[1] === 'ts' ? 'ts' : 'sh';
      found.push({ page, line: i + 1, lang, code: lines.slice(i + 1, end).join('\n') + '\n' });
      i = end;
    }
  }
  return found;
}

const SNIPPETS = runnableSnippets();

let gw: TestGateway;
let key: string;
let cwd: string;

beforeAll(async () => {
  gw = await startTestGateway({ NODE_ENV: 'development' });
  key = (await gw.gateway.keys!.createKey('default')).key;
  cwd = mkdtempSync(join(ROOT, '.doc-snippets-'));
});

afterAll(async () => {
  await gw?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** The snippet as the reader runs it against this test's gateway. */
function adapted(code: string): string {
  const host = new URL(gw.url).host;
  return code.replaceAll('localhost:8080', host).replace(/^KEY=gwk_\.\.\./m, `KEY=${key}`);
}

function run(file: string, args: string[], where: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(file, args, { cwd: where, env: process.env, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}

async function runSnippet(s: Snippet): Promise<{ code: number; stdout: string; stderr: string }> {
  // Shell from the checkout's root, as the README's reader types it (its rule files are found from there).
  if (s.lang === 'sh') return run('bash', ['-euo', 'pipefail', '-c', adapted(s.code)], ROOT);
  const file = join(cwd, `snippet-${s.line}.mts`);
  writeFileSync(file, adapted(s.code));
  return run(process.execPath, ['--import', 'tsx', file], cwd);
}

/** What each snippet's page says it does, checked on its output. */
const PROMISES: Readonly<Record<string, (stdout: string) => void>> = {
  'README.md sh': (out) => {
    expect(out).toMatch(/^HTTP\/1\.1 200 OK/m); // /info
    expect(out).toMatch(/^ratelimit: "high-throughput-public\.ip";r=1999;t=1, "guard\.per-ip";r=\d+;t=1/im);
    expect(out).toMatch(/401\n429$/m); // /runs/stats twice: the example app's 401, then the limit
    expect(out).toContain('"name":"default"'); // the control plane's default deployment
    expect(out).toMatch(/event: messages/); // the streamed run
    expect(out).toContain('POST /runs/query'); // gateway explain
    expect(out.trimEnd()).toMatch(/\n200$/); // /docs
  },
  'README.md ts': (out) => expect(out).toContain('You said "hi"'),
  'docs/agent-server.md ts': (out) => expect(out).toContain('You said "hi"'),
};

describe('the runnable snippets of the README and docs', () => {
  it('are found (a marker lost would silently test nothing)', () => {
    expect(SNIPPETS.map((s) => `${s.page} ${s.lang}`).sort()).toEqual(Object.keys(PROMISES).sort());
  });

  it.each(SNIPPETS.map((s) => [`${s.page}:${s.line} (${s.lang})`, s] as const))(
    '%s runs as written',
    async (_name, snippet) => {
      const r = await runSnippet(snippet);
      expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(0);
      PROMISES[`${snippet.page} ${snippet.lang}`]!(r.stdout);
    },
    90_000,
  );
});
