/**
 * Sends the soak's requests and tallies their answers: per bucket (sent, admitted, denied, errors, first send, last
 * answer) and, for anything but 200/429, per status or network error.
 */
import type { Pool } from 'undici';
import { type Matcher, type MatchRequest } from '../../src/rules/compile.ts';
import { identityOf } from '../../src/rules/identity.ts';
import type { Shot } from './traffic.ts';

export interface Bucket {
  readonly cls: string;
  readonly capacity: number;
  readonly perSeconds: number;
  sent: number;
  admitted: number;
  denied: number;
  /** Answers other than 200/429 (a store timeout may still have taken a token in Redis). */
  errors: number;
  first: number;
  last: number;
}

export interface Errors {
  readonly status: Map<number, number>;
  readonly network: Map<string, number>;
}

export interface Tally {
  readonly buckets: Map<string, Bucket>;
  readonly errors: Errors;
  /** Requests answered or failed so far. */
  readonly requests: number;
  /** The one bucket `shot` takes from, by the same matcher the edge compiles; throws when the plan is wrong. */
  bucketOf(shot: Shot): Bucket;
  send(pool: Pool, shot: Shot): Promise<void>;
}

export function createTally(matcher: Matcher): Tally {
  const buckets = new Map<string, Bucket>();
  const errors: Errors = { status: new Map<number, number>(), network: new Map<string, number>() };
  const count = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
  let requests = 0;

  function bucketOf(shot: Shot): Bucket {
    const request: MatchRequest = { method: shot.method, path: shot.path, headers: shot.headers, ip: shot.ip };
    const match = matcher.match(request);
    if (!match || match.rule.id !== shot.rule || match.limits.length !== 1) {
      throw new Error(
        `${shot.cls}: ${shot.method} ${shot.path} decides ${match?.rule.id} with ${match?.limits.length} limits, not ${shot.rule} with one`,
      );
    }
    const limit = match.limits[0]!;
    const id = `${match.rule.id}\u0000${limit.by}\u0000${identityOf(request, limit.by)}`;
    let b = buckets.get(id);
    if (!b)
      buckets.set(
        id,
        (b = {
          cls: shot.cls,
          capacity: limit.count,
          perSeconds: limit.perSeconds,
          sent: 0,
          admitted: 0,
          denied: 0,
          errors: 0,
          first: Infinity,
          last: 0,
        }),
      );
    return b;
  }

  async function send(pool: Pool, shot: Shot): Promise<void> {
    const bucket = bucketOf(shot);
    const start = performance.now();
    try {
      const res = await pool.request({
        method: shot.method,
        path: shot.path,
        headers: { ...shot.headers, 'x-forwarded-for': shot.ip },
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      await res.body.dump();
      requests++;
      if (res.statusCode !== 200 && res.statusCode !== 429) {
        count(errors.status, res.statusCode); // neither admitted nor denied: not counted in the bucket
        bucket.errors++;
        return;
      }
      bucket.sent++;
      bucket.first = Math.min(bucket.first, start);
      bucket.last = Math.max(bucket.last, performance.now());
      if (res.statusCode === 200) bucket.admitted++;
      else bucket.denied++;
    } catch (err) {
      requests++;
      bucket.errors++;
      count(errors.network, (err as { code?: string }).code ?? (err as Error).message);
    }
  }

  return {
    buckets,
    errors,
    get requests() {
      return requests;
    },
    bucketOf,
    send,
  };
}
