import { createHmac } from 'node:crypto';
import { memoKey } from '../memo/memo-key.ts';
import { RecentlyUsed } from '../memo/recently-used.ts';
import type { IdentityKind } from '../rules/identity.ts';

/**
 * Bucket keys: `<prefix>:<region>:<rule>:<by>:<identity digest>`.
 *
 * The identity (`identityOf`: API key, user id + IP, IP) is replaced by a keyed hash
 * (HMAC-SHA256 under the identity secret, 128 bits, base64url), so a key in
 * Redis, a log line or a metric never holds a raw credential or address, and
 * without the secret an IP cannot be recovered by hashing the address space.
 */
export interface KeyScheme {
  readonly prefix: string;
  readonly region: string;
  readonly secret: string;
}

export function identityDigest(secret: string, identity: string): string {
  return createHmac('sha256', secret).update(identity).digest('base64url').slice(0, 22);
}

export function bucketKey(scheme: KeyScheme, rule: string, by: IdentityKind, identity: string): string {
  return `${scheme.prefix}:${scheme.region}:${rule}:${by}:${identityDigest(scheme.secret, identity)}`;
}

/**
 * `bucketKey` with the digests remembered: an HMAC costs microseconds, and
 * the same identities come back request after request. Remembered under `memoKey`, so an entry's size is bounded
 * however long the identity.
 */
export function cachedBucketKeys(scheme: KeyScheme, size = 50_000) {
  const digests = new RecentlyUsed<string, string>(size);
  const digest = (identity: string): string => {
    const memo = memoKey(identity);
    let d = digests.get(memo);
    if (d === undefined) digests.set(memo, (d = identityDigest(scheme.secret, identity)));
    return d;
  };
  const head = `${scheme.prefix}:${scheme.region}:`;
  return (rule: string, by: IdentityKind, identity: string): string => `${head}${rule}:${by}:${digest(identity)}`;
}
