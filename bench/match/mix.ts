/**
 * The match benchmark's request mix (bench/match.ts): every table row (hits
 * and near misses), Agent Server traffic the table does not name and long
 * paths, in five header sets, normalised and shuffled once, per region.
 */
import { join } from 'node:path';
import { compile, type Matcher, type MatchRequest } from '../../src/rules/compile.ts';
import type { REGIONS } from '../../src/region.ts';
import { loadRuleFile, regionRuleFile } from '../../src/rules/load.ts';
import { normalizePath } from '../../src/rules/normalize-path.ts';
import type { Rule } from '../../src/rules/types.ts';

const U1 = '3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b';
const U2 = 'A1B2C3D4-E5F6-4711-8899-AABBCCDDEEFF';
const LONG = `/threads/${U1}/runs/${U1}/stream/${'segment-'.repeat(12)}end/${'x'.repeat(40)}`;

/**
 * [method, raw path]: every table row (hits and near misses), Agent Server traffic the table does not name, long paths.
 */
export const TRAFFIC: readonly (readonly [string, string])[] = [
  ['OPTIONS', '/threads'],
  ['GET', '/info'],
  ['POST', '/v1/metadata/submit'],
  ['POST', '/api/v1/metadata/submit'],
  ['POST', '/auth/login'],
  ['GET', '/auth'],
  ['GET', '/authx'],
  ['POST', '/v1/beacon'],
  ['GET', '/repos/org/name'],
  ['POST', '/runs/batch'],
  ['POST', '/otel/v1/traces'],
  ['POST', '/api/charts/abc'],
  ['POST', '/runs/multipart'],
  ['POST', '/runs/query'],
  ['POST', '/runs/query/'],
  ['POST', '/generate/prompt'],
  ['GET', '/commits/org/repo/abc'],
  ['DELETE', `/sessions/${U1}`],
  ['GET', '/sessions'],
  ['POST', `/datasets/${U1}/trigger`],
  ['POST', '/runs'],
  ['PATCH', `/runs/${U1}`],
  ['POST', '/feedback'],
  ['POST', '/feedback/tokens'],
  ['GET', `/runs/${U1}`],
  ['GET', `/runs/${U2}`],
  ['GET', `/api/v1/runs/${U1}`],
  ['GET', '/runs/not-a-uuid'],
  ['GET', '/datasets/examples'],
  ['GET', '/public/download/file.tar.gz'],
  ['GET', '/runs/stats'],
  ['POST', '/runs/stats/x'],
  ['GET', '/xv1/metadata/submit'],
  ['GET', '/'],
  ['GET', '/threads'],
  ['POST', '/threads/search'],
  ['GET', `/threads/${U1}`],
  ['POST', `/threads/${U1}/runs/stream`],
  ['GET', `/threads/${U1}/runs/${U1}/join`],
  ['POST', '/assistants/search'],
  ['PUT', '/store/items'],
  ['GET', '/ok'],
  ['GET', '/v2/deployments'],
  ['HEAD', '/api-host/v2/workspaces/current'],
  ['GET', LONG],
  ['POST', LONG],
  ['PATCH', LONG],
  ['GET', `${LONG}/`],
  ['PURGE', '/cache'],
  ['DELETE', `/threads/${U1}`],
];

const HEADER_SETS: readonly Record<string, string>[] = [
  {},
  { 'x-api-key': 'lsv2_pt_0123456789abcdef' },
  { 'x-user-id': 'user-42' },
  { 'x-api-key': 'lsv2_pt_0123456789abcdef', 'x-user-id': 'user-42' },
  { 'x-api-key': '' },
];

export interface Region {
  readonly name: string;
  readonly rules: readonly Rule[];
  readonly matcher: Matcher;
  readonly requests: readonly MatchRequest[];
  /** Per TRAFFIC row, its requests in every header set (for BENCH_BREAKDOWN). */
  readonly byRow: readonly (readonly MatchRequest[])[];
}

export function buildRegion(name: (typeof REGIONS)[number]): Region {
  const { rules } = loadRuleFile(regionRuleFile(join(import.meta.dirname, '..', '..', 'rules'), name));
  const byRow = TRAFFIC.map(([method, raw], t) =>
    HEADER_SETS.map((headers, h) => ({
      method,
      path: normalizePath(raw),
      headers: { ...headers, accept: '*/*' },
      ip: `10.1.${h}.${t}`,
    })),
  );
  const requests = byRow.flat();
  // Shuffle deterministically so that no branch sees a long run of one shape.
  let s = 42;
  for (let i = requests.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [requests[i], requests[j]] = [requests[j]!, requests[i]!];
  }
  return { name, rules, matcher: compile(rules), requests, byRow };
}
