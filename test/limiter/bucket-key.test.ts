import { describe, expect, it } from 'vitest';
import { bucketKey, cachedBucketKeys, identityDigest } from '../../src/limiter/bucket-key.ts';

const scheme = { prefix: 'rl', region: 'us', secret: 'a-secret-of-sixteen-chars' };

describe('bucket keys', () => {
  it('have the documented shape and never hold the raw identity', () => {
    const key = bucketKey(scheme, 'runs-query', 'api-key', 'lsv2_pt_secret');
    expect(key).toMatch(/^rl:us:runs-query:api-key:[A-Za-z0-9_-]{22}$/);
    expect(key).not.toContain('lsv2_pt_secret');
  });

  it('depend on the secret, so digests cannot be recomputed without it', () => {
    expect(identityDigest('secret-one-sixteen!', '10.0.0.1')).not.toBe(
      identityDigest('secret-two-sixteen!', '10.0.0.1'),
    );
  });

  it('are the same through the cache, across its generations', () => {
    const keyOf = cachedBucketKeys(scheme, 3);
    const ids = Array.from({ length: 20 }, (_, i) => `id-${i % 7}`);
    for (const id of ids) expect(keyOf('public', 'ip', id)).toBe(bucketKey(scheme, 'public', 'ip', id));
  });
});
