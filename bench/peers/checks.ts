/**
 * Correctness before speed: each target must answer 200 with the upstream's
 * exact body; each limiter (not the bare proxy) with the rate-limit headers of
 * the rule meant for the path; and the Redis targets must really count in
 * Redis. The edge benchmark times nothing unless every check passes.
 */
import { request } from 'node:http';
import type { Redis } from 'ioredis';
import { IN_FLIGHT_GUARD, IN_FLIGHT_SLOTS, isInFlightTarget, usesRedis, type TargetName } from './edge-settings.ts';
import { scriptCalls } from './redis-keys.ts';

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

/** One GET on a fresh connection (nothing of a check lingers in a keep-alive pool). */
export function get(url: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

/** A path the benchmark loads, with the limit that must apply to it. */
export interface LimitedPath {
  readonly path: string;
  readonly rule: string;
  readonly count: number;
  readonly perSeconds: number;
}

/** Which rate-limit headers a target answers with; `bare`: none (a proxy without limits). */
export type Flavour = 'edge' | 'fastify' | 'bare';

/** Problems with one target on one path; empty when it answers as it must. */
export async function checkPath(
  url: string,
  flavour: Flavour,
  limited: LimitedPath,
  apiKey: string,
  upstreamBody: Buffer,
): Promise<string[]> {
  let reply: Reply;
  try {
    reply = await get(url + limited.path, { 'x-api-key': apiKey });
  } catch (err) {
    return [`GET ${limited.path}: ${(err as Error).message}`];
  }
  const fault = (why: string) => [
    `GET ${limited.path}: ${why}\n  ${JSON.stringify(reply.headers)}\n  ${reply.body.toString().slice(0, 200)}`,
  ];
  if (reply.status !== 200) return fault(`status ${reply.status}, want 200`);
  if (!reply.body.equals(upstreamBody)) return fault(`the body is not the upstream's ${upstreamBody.length} bytes`);
  if (flavour === 'edge') {
    const policy = `"${limited.rule}.api-key";q=${limited.count};w=${limited.perSeconds}`;
    if (!String(reply.headers['ratelimit-policy'] ?? '').includes(policy))
      return fault(`RateLimit-Policy lacks ${policy}`);
    if (!String(reply.headers.ratelimit ?? '').startsWith(`"${limited.rule}.api-key";r=`))
      return fault('no RateLimit item for the rule');
  } else if (flavour === 'fastify' && reply.headers['x-ratelimit-limit'] !== String(limited.count)) {
    return fault(`x-ratelimit-limit is ${reply.headers['x-ratelimit-limit']}, want ${limited.count}`);
  }
  return [];
}

/** An `-inflight` target takes a slot of the in-flight guard on every measured path (and says so in its headers). */
async function inFlightChecked(url: string, paths: readonly LimitedPath[]): Promise<string[]> {
  const policy = `"guard.${IN_FLIGHT_GUARD.id}";q=${IN_FLIGHT_SLOTS};qu="concurrent-requests"`;
  const problems: string[] = [];
  for (const mode of paths) {
    const reply = await get(url + mode.path, { 'x-api-key': `in-flight-check-${mode.rule}` });
    if (!String(reply.headers['ratelimit-policy'] ?? '').includes(policy))
      problems.push(`GET ${mode.path}: RateLimit-Policy lacks ${policy}`);
    if (!new RegExp(`"guard\\.${IN_FLIGHT_GUARD.id}";r=\\d+(,|$)`).test(String(reply.headers.ratelimit ?? '')))
      problems.push(`GET ${mode.path}: no RateLimit item for the in-flight guard`);
  }
  return problems;
}

/**
 * Whether a target counts in Redis. Bucket keys cannot show it (a GCRA key
 * lives only until its bucket is full again: milliseconds here), so count the
 * scripts Redis runs while the target answers `n` requests. Other clients of
 * a shared Redis can only add to the count; a target that never reached
 * Redis adds nothing.
 */
export async function countsInRedis(
  redis: Redis,
  url: string,
  limited: LimitedPath,
  keyPrefix: string,
  n = 20,
): Promise<string[]> {
  const before = await scriptCalls(redis);
  for (let i = 0; i < n; i++) await get(url + limited.path, { 'x-api-key': `${keyPrefix}-${i}` });
  const calls = (await scriptCalls(redis)) - before;
  return calls < n ? [`Redis ran ${calls} scripts for ${n} requests; is it counting in Redis?`] : [];
}

/**
 * Every check on every target (the upstream itself: 200 with 100 bytes); the upstream's body is what the targets must
 * answer. A fresh process connects to Redis and loads its script on its first requests, which can take longer than the
 * store budget (STORE_TIMEOUT_MS, 50 ms) on a slow or profiled run: a few unjudged requests go first.
 */
export async function checkTargets(
  upstreamUrl: string,
  services: ReadonlyMap<TargetName, { readonly url: string }>,
  paths: readonly LimitedPath[],
  rotating: LimitedPath,
  redis: Redis,
  checkKey: string,
): Promise<{ problems: string[]; upstreamBody: Buffer }> {
  const problems: string[] = [];
  const direct = await get(upstreamUrl + rotating.path);
  const upstreamBody = direct.body;
  if (direct.status !== 200 || upstreamBody.length !== 100)
    problems.push(`upstream: ${direct.status}, ${upstreamBody.length} bytes (want 200, 100 bytes)`);
  for (const service of services.values()) {
    for (const mode of paths) {
      for (let i = 0; i < 5; i++) await get(service.url + mode.path, { 'x-api-key': checkKey }).catch(() => null);
    }
  }
  for (const [target, service] of services) {
    if (target === 'direct') continue;
    const flavour: Flavour = target === 'fastify-redis' ? 'fastify' : target === 'bare-proxy' ? 'bare' : 'edge';
    for (const mode of paths) {
      problems.push(
        ...(await checkPath(service.url, flavour, mode, checkKey, upstreamBody)).map((p) => `${target} ${p}`),
      );
    }
    if (isInFlightTarget(target))
      problems.push(...(await inFlightChecked(service.url, paths)).map((p) => `${target} ${p}`));
    if (usesRedis(target))
      problems.push(...(await countsInRedis(redis, service.url, rotating, checkKey)).map((p) => `${target}: ${p}`));
  }
  return { problems, upstreamBody };
}
