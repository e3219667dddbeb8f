import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { normalizePath } from '../../src/rules/normalize-path.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';

/**
 * Finding "encoded slash bypass": `/runs%2Fquery` was counted under `default` (1,000 per 10 s) and forwarded as is;
 * an upstream that decodes the path (Werkzeug, uvicorn/Starlette) serves it as `/runs/query` (15 per 10 s). Now
 * ESCAPED_SLASHES decides, the same in the edge and in `gateway explain`: `reject` (default, 400 invalid_path),
 * `unescape` (decoded, then matched and forwarded), `keep` (the old behaviour, unsafe with decoding upstreams).
 */
const SPELLINGS = ['/runs%2Fquery', '/runs%2fquery', '/runs%5Cquery', '/runs%5cquery', '/x%2F..%2Fruns%2Fquery'];

describe('normalizePath with ESCAPED_SLASHES', () => {
  it('reject refuses every spelling of an encoded slash or backslash', () => {
    for (const p of SPELLINGS) expect(() => normalizePath(p, 'reject'), p).toThrow(/ESCAPED_SLASHES=reject/);
  });

  it('unescape decodes them before the other steps: the path a decoding upstream routes', () => {
    for (const p of SPELLINGS) expect(normalizePath(p, 'unescape'), p).toBe('/runs/query');
  });

  it('keep leaves them encoded; a double-encoded slash is data in every mode', () => {
    expect(normalizePath('/runs%2fquery', 'keep')).toBe('/runs%2Fquery');
    for (const mode of ['reject', 'unescape', 'keep'] as const)
      expect(normalizePath('/runs%252Fquery', mode)).toBe('/runs%252Fquery');
  });

  it('is a setting, reject by default; an invalid value fails naming it', () => {
    expect(loadSettings({}).escapedSlashes).toBe('reject');
    expect(loadSettings({ ESCAPED_SLASHES: 'Unescape' }).escapedSlashes).toBe('unescape');
    expect(() => loadSettings({ ESCAPED_SLASHES: 'decode' })).toThrow(
      /^ESCAPED_SLASHES: must be one of reject, unescape, keep/,
    );
  });
});

describe('at the edge', () => {
  let upstream: TestUpstream;
  const gws: TestGateway[] = [];
  const edge = async (mode: string | null) => {
    const gw = await startTestGateway({
      AGENT_SERVER_URL: upstream.url,
      CONTROL_PLANE_URL: upstream.url,
      ...(mode !== null && { ESCAPED_SLASHES: mode }),
    });
    gws.push(gw);
    return gw;
  };
  const post = async (gw: TestGateway, path: string, key: string) => {
    const res = await request(`${gw.url}${path}`, { method: 'POST', headers: { 'x-api-key': key } });
    return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as Record<string, unknown> };
  };

  beforeAll(async () => (upstream = await startUpstream()));
  afterAll(async () => {
    for (const gw of gws) await gw.close();
    await upstream?.close();
  });

  it('by default answers 400 invalid_path and forwards nothing', async () => {
    const gw = await edge(null);
    for (const p of SPELLINGS) {
      const r = await post(gw, p, 'slash-default');
      expect(r.status, p).toBe(400);
      expect(r.body.code).toBe('invalid_path');
    }
    expect(upstream.seen.filter((s) => s.headers['x-api-key'] === 'slash-default')).toEqual([]);
  });

  it('unescape counts /runs%2Fquery under runs-query and forwards /runs/query', async () => {
    const gw = await edge('unescape');
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) statuses.push((await post(gw, '/runs%2Fquery', 'slash-unescape')).status);
    expect(statuses).toEqual([...Array(15).fill(200), 429]); // runs-query: 15 per 10 s per key
    const seen = upstream.seen.filter((s) => s.headers['x-api-key'] === 'slash-unescape');
    expect(new Set(seen.map((s) => s.url))).toEqual(new Set(['/runs/query']));
  });

  it('keep is the old behaviour: counted under default, forwarded encoded', async () => {
    const gw = await edge('keep');
    const r = await post(gw, '/runs%2Fquery', 'slash-keep');
    expect(r.status).toBe(200);
    expect(r.headers['ratelimit-policy']).toContain('"default.api-key"');
    expect(upstream.seen.find((s) => s.headers['x-api-key'] === 'slash-keep')!.url).toBe('/runs%2Fquery');
  });
});

describe('the other spellings that fall under default', () => {
  // Decided safe (see docs/rules.md, "How request paths are matched"): the common upstreams do not route them to
  // /runs/query either, so what the edge counts and what the upstream serves stay the same path.
  it('are counted and forwarded as they are', () => {
    for (const p of ['/runs/query;x', '/RUNS/query', '/runs/query.', '/runs/query%20', '/runs/query%00'])
      expect(normalizePath(p, 'reject'), p).toBe(p);
  });
});

describe('gateway explain', () => {
  const explain = async (target: string, mode?: string) => {
    const saved = process.env.ESCAPED_SLASHES;
    if (mode === undefined) delete process.env.ESCAPED_SLASHES;
    else process.env.ESCAPED_SLASHES = mode;
    const stdout: string[] = [];
    const stderr: string[] = [];
    try {
      const code = await main(['explain', 'POST', target, '-H', 'x-api-key: k', '--json'], {
        log: (l) => stdout.push(l),
        err: (l) => stderr.push(l),
      });
      return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
    } finally {
      if (saved === undefined) delete process.env.ESCAPED_SLASHES;
      else process.env.ESCAPED_SLASHES = saved;
    }
  };

  it('says what the edge does: 400 invalid_path by default, the decoded rule with unescape', async () => {
    const rejected = await explain('/runs%2Fquery');
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toMatch(/the edge answers 400 invalid_path: .*ESCAPED_SLASHES=reject/);
    const unescaped = JSON.parse((await explain('/runs%2Fquery', 'unescape')).stdout) as Record<string, unknown>;
    expect(unescaped.normalized_path).toBe('/runs/query');
    expect(unescaped.rule).toBe('runs-query');
    const kept = JSON.parse((await explain('/runs%2Fquery', 'keep')).stdout) as Record<string, unknown>;
    expect(kept.rule).toBe('default');
  });
});
