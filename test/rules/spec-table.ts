import type { Headers, IdentityKind } from '../../src/rules/identity.ts';
import type { Region } from '../../src/region.ts';

/**
 * Every row of the platform's published limit table, in both regions,
 * as the rule files (rules/*.yaml) must encode it: each row names the rule
 * that must decide, the bucket that must apply and its numbers. A row's
 * identity column is the limit's `by` ("x-user-id + IP" is `user-ip`); a
 * request carrying none of a rule's identities falls through to a later rule.
 * Checked by table.test.ts.
 */

export const KEY = 'lsv2_test_key';
export const USER = 'user-42';
export const IP = '203.0.113.7';
const UUID = '0b8e4d7c-3f2a-4c1e-9d6b-5a4f3e2d1c0b';

/** Which identity header a request carries. */
export type Who = 'key' | 'user' | 'none';
export const HEADERS: Record<Who, Headers> = { key: { 'x-api-key': KEY }, user: { 'x-user-id': USER }, none: {} };
export const IDENTITY: Record<IdentityKind, string> = { 'api-key': KEY, 'user-ip': `${USER}\u0000${IP}`, ip: IP };

export interface Expected {
  readonly rule: string;
  readonly by: IdentityKind;
  readonly count: number | Readonly<Record<Region, number>>;
  readonly per: number;
  readonly category: string;
}

// The spec table, one entry per row, keyed by the row as the spec writes it.
export const ROWS = {
  'OPTIONS; /info; */v1/metadata/submit | IP': {
    rule: 'high-throughput-public',
    by: 'ip',
    count: 2000,
    per: 10,
    category: 'High throughput',
  },
  '/auth | x-api-key': { rule: 'auth', by: 'api-key', count: 2000, per: 10, category: 'High throughput' },
  '/auth | x-user-id + IP': { rule: 'auth', by: 'user-ip', count: 2000, per: 10, category: 'High throughput' },
  '/v1/beacon | IP': { rule: 'beacon', by: 'ip', count: 2000, per: 10, category: 'High throughput' },
  '/repos | x-api-key': { rule: 'repos', by: 'api-key', count: 100, per: 60, category: 'Repository' },
  '/repos | x-user-id + IP': { rule: 'repos', by: 'user-ip', count: 100, per: 60, category: 'Repository' },
  'POST /runs/batch | x-api-key': {
    rule: 'runs-batch',
    by: 'api-key',
    count: 2000,
    per: 10,
    category: 'High throughput',
  },
  'POST /otel/v1/traces | x-api-key': {
    rule: 'otel-traces',
    by: 'api-key',
    count: 2000,
    per: 10,
    category: 'Run ingest',
  },
  'POST, path containing /charts | x-api-key': {
    rule: 'charts',
    by: 'api-key',
    count: 750,
    per: 600,
    category: 'Charts',
  },
  'POST, path containing /charts | x-user-id + IP': {
    rule: 'charts',
    by: 'user-ip',
    count: 750,
    per: 600,
    category: 'Charts',
  },
  'POST /runs/multipart | x-api-key': {
    rule: 'runs-multipart',
    by: 'api-key',
    count: 6000,
    per: 10,
    category: 'Multipart ingest',
  },
  'POST /runs/query | x-api-key': {
    rule: 'runs-query',
    by: 'api-key',
    count: 15,
    per: 10,
    category: 'Run query (API)',
  },
  'POST /runs/query | x-user-id + IP': {
    rule: 'runs-query',
    by: 'user-ip',
    count: 300,
    per: 10,
    category: 'Run query (User)',
  },
  '/generate | x-api-key': { rule: 'generate', by: 'api-key', count: 30, per: 3600, category: 'Generation' },
  '/generate | x-user-id + IP': { rule: 'generate', by: 'user-ip', count: 30, per: 3600, category: 'Generation' },
  '/commits | x-api-key': {
    rule: 'commits',
    by: 'api-key',
    count: { us: 10000, eu: 2000 },
    per: 60,
    category: 'Commits',
  },
  '/commits | x-user-id + IP': {
    rule: 'commits',
    by: 'user-ip',
    count: { us: 10000, eu: 2000 },
    per: 60,
    category: 'Commits',
  },
  'DELETE /sessions; */trigger | x-api-key': {
    rule: 'deletion',
    by: 'api-key',
    count: 10,
    per: 60,
    category: 'Deletion',
  },
  'DELETE /sessions; */trigger | x-user-id + IP': {
    rule: 'deletion',
    by: 'user-ip',
    count: 30,
    per: 60,
    category: 'Deletion',
  },
  'POST /runs (single run) | x-api-key': {
    rule: 'runs-single',
    by: 'api-key',
    count: 2000,
    per: 10,
    category: 'Run ingest',
  },
  'PATCH, path containing /runs | x-api-key': {
    rule: 'runs-patch',
    by: 'api-key',
    count: 2000,
    per: 10,
    category: 'Run ingest',
  },
  'POST /feedback | x-api-key': { rule: 'feedback', by: 'api-key', count: 2000, per: 10, category: 'High throughput' },
  'GET /runs/{uuid} or /api/v1/runs/{uuid} | x-api-key': {
    rule: 'run-lookup',
    by: 'api-key',
    count: 30,
    per: 60,
    category: 'Run lookup',
  },
  'GET, path containing /examples | x-api-key': {
    rule: 'examples',
    by: 'api-key',
    count: 5000,
    per: 60,
    category: 'Examples',
  },
  'Any request with x-api-key | x-api-key': {
    rule: 'default',
    by: 'api-key',
    count: 1000,
    per: 10,
    category: 'Default (API key)',
  },
  'Any request with x-user-id | x-user-id + IP': {
    rule: 'default',
    by: 'user-ip',
    count: 1000,
    per: 10,
    category: 'Default (User)',
  },
  '/public/download | IP': { rule: 'public-download', by: 'ip', count: 5000, per: 60, category: 'Public download' },
  '/runs/stats | x-api-key': {
    rule: 'runs-stats',
    by: 'api-key',
    count: { us: 1, eu: 20 },
    per: 10,
    category: 'Stats',
  },
  'All other requests (catch-all) | IP': {
    rule: 'public',
    by: 'ip',
    count: 100,
    per: 60,
    category: 'Public (catch-all)',
  },
} as const satisfies Record<string, Expected>;
type Row = keyof typeof ROWS;

// Requests that must land on a row: [row, method, path, identity header sent].
export const CASES: readonly (readonly [Row, string, string, Who])[] = [
  // OPTIONS on any path, /info, any path ending in /v1/metadata/submit (with any prefix or none).
  // IP-only, so an identity header changes nothing.
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'OPTIONS', '/runs/query', 'none'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'OPTIONS', '/repos/a', 'key'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'GET', '/info', 'none'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'POST', '/info', 'user'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'POST', '/v1/metadata/submit', 'none'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'POST', '/api/v1/metadata/submit', 'key'],
  ['OPTIONS; /info; */v1/metadata/submit | IP', 'PUT', '/a/b/c/v1/metadata/submit', 'none'],
  // /auth is a prefix on segment boundaries: /auth and /auth/x, never /authx (see defaults).
  ['/auth | x-api-key', 'GET', '/auth', 'key'],
  ['/auth | x-api-key', 'POST', '/auth/x', 'key'],
  ['/auth | x-user-id + IP', 'GET', '/auth/login/callback', 'user'],
  ['/v1/beacon | IP', 'POST', '/v1/beacon', 'none'],
  ['/v1/beacon | IP', 'GET', '/v1/beacon/ping', 'key'],
  ['/repos | x-api-key', 'GET', '/repos', 'key'],
  ['/repos | x-user-id + IP', 'PUT', '/repos/acme/prompt', 'user'],
  ['POST /runs/batch | x-api-key', 'POST', '/runs/batch', 'key'],
  ['POST /otel/v1/traces | x-api-key', 'POST', '/otel/v1/traces', 'key'],
  ['POST, path containing /charts | x-api-key', 'POST', '/charts', 'key'],
  ['POST, path containing /charts | x-api-key', 'POST', '/api/v1/charts/section', 'key'],
  ['POST, path containing /charts | x-user-id + IP', 'POST', '/org/charts', 'user'],
  ['POST /runs/multipart | x-api-key', 'POST', '/runs/multipart', 'key'],
  ['POST /runs/query | x-api-key', 'POST', '/runs/query', 'key'],
  ['POST /runs/query | x-user-id + IP', 'POST', '/runs/query', 'user'],
  ['/generate | x-api-key', 'GET', '/generate', 'key'],
  ['/generate | x-user-id + IP', 'POST', '/generate/prompt', 'user'],
  ['/commits | x-api-key', 'POST', '/commits', 'key'],
  ['/commits | x-user-id + IP', 'GET', '/commits/acme/prompt/abc123', 'user'],
  // DELETE applies to /sessions only; */trigger is any path ending in /trigger, any method.
  ['DELETE /sessions; */trigger | x-api-key', 'DELETE', '/sessions', 'key'],
  ['DELETE /sessions; */trigger | x-api-key', 'DELETE', '/sessions/123', 'key'],
  ['DELETE /sessions; */trigger | x-api-key', 'GET', '/workflows/w1/trigger', 'key'],
  ['DELETE /sessions; */trigger | x-api-key', 'POST', '/trigger', 'key'],
  ['DELETE /sessions; */trigger | x-user-id + IP', 'DELETE', '/sessions/123', 'user'],
  ['DELETE /sessions; */trigger | x-user-id + IP', 'PUT', '/a/trigger', 'user'],
  ['POST /runs (single run) | x-api-key', 'POST', '/runs', 'key'],
  ['PATCH, path containing /runs | x-api-key', 'PATCH', `/runs/${UUID}`, 'key'],
  ['PATCH, path containing /runs | x-api-key', 'PATCH', '/api/v1/runs/x', 'key'],
  ['POST /feedback | x-api-key', 'POST', '/feedback', 'key'],
  ['POST /feedback | x-api-key', 'POST', '/feedback/tokens/abc', 'key'],
  // A real UUID only (either case of hex digits).
  ['GET /runs/{uuid} or /api/v1/runs/{uuid} | x-api-key', 'GET', `/runs/${UUID}`, 'key'],
  ['GET /runs/{uuid} or /api/v1/runs/{uuid} | x-api-key', 'GET', `/api/v1/runs/${UUID.toUpperCase()}`, 'key'],
  ['GET, path containing /examples | x-api-key', 'GET', '/examples', 'key'],
  ['GET, path containing /examples | x-api-key', 'GET', '/datasets/d1/examples', 'key'],
  // Default (API key): a keyed request no earlier row takes, including near misses of those rows.
  ['Any request with x-api-key | x-api-key', 'GET', '/anything', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/authx', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/runs/not-a-uuid', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', `/runs/${UUID}/extra`, 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/runs/query', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/sessions/123', 'key'],
  ['Any request with x-api-key | x-api-key', 'DELETE', '/sessionsx', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/triggers', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/runs', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/feedback', 'key'],
  ['Any request with x-api-key | x-api-key', 'POST', '/examples', 'key'],
  ['Any request with x-api-key | x-api-key', 'GET', '/charts', 'key'],
  // Default (User): a user request no earlier row takes, including rows with an api-key limit only.
  ['Any request with x-user-id | x-user-id + IP', 'GET', '/anything', 'user'],
  ['Any request with x-user-id | x-user-id + IP', 'POST', '/runs/batch', 'user'],
  ['Any request with x-user-id | x-user-id + IP', 'GET', '/runs/stats', 'user'],
  ['Any request with x-user-id | x-user-id + IP', 'GET', `/runs/${UUID}`, 'user'],
  // IP-only and placed before the defaults, so a keyed download counts here too.
  ['/public/download | IP', 'GET', '/public/download', 'none'],
  ['/public/download | IP', 'GET', '/public/download/file.tar.gz', 'key'],
  ['/runs/stats | x-api-key', 'GET', '/runs/stats', 'key'],
  ['/runs/stats | x-api-key', 'POST', '/runs/stats/daily', 'key'],
  // Anything without an identity header that no IP row takes.
  ['All other requests (catch-all) | IP', 'GET', '/anything', 'none'],
  ['All other requests (catch-all) | IP', 'GET', '/repos', 'none'],
  ['All other requests (catch-all) | IP', 'POST', '/runs/query', 'none'],
  ['All other requests (catch-all) | IP', 'GET', '/runs/stats', 'none'],
  ['All other requests (catch-all) | IP', 'BREW', '/coffee', 'none'],
];
