import { createHash, timingSafeEqual } from 'node:crypto';
import { Auth, HTTPException } from '@langchain/langgraph-sdk/auth';

/**
 * API-key authentication with the public JS `Auth` API (it works unchanged on the hosted platform): a request's
 * `x-api-key` must be one of the keys in the app's `APP_API_KEYS` (comma-separated), a secret of the deployment, never
 * a value in this file. The caller's identity is a digest of its key, never the key itself.
 */
const digest = (value: string) => createHash('sha256').update(value).digest();

function allowed(): Buffer[] {
  return (process.env.APP_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
    .map(digest);
}

export const auth = new Auth().authenticate(async (request: Request) => {
  const key = request.headers.get('x-api-key');
  if (!key) throw new HTTPException(401, { message: 'Missing x-api-key header.' });
  const given = digest(key);
  // Compared as digests of equal length, in constant time.
  if (!allowed().some((k) => timingSafeEqual(k, given)))
    throw new HTTPException(401, { message: 'Invalid x-api-key.' });
  const identity = `key-${given.toString('hex').slice(0, 12)}`;
  return { identity, permissions: [] };
});
