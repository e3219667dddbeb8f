import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A revision's bearer token for the gateway's internal endpoints a pod uses (its artifact, key checks):
 * `<deployment id>.<revision id>.<HMAC-SHA256 of both, base64url>` under a key derived from SECRETS_KEY
 * (`box.derive('revision-tokens')`). Any gateway replica with the same SECRETS_KEY checks it; nothing is stored.
 */
export interface RevisionIdentity {
  readonly deploymentId: string;
  readonly revisionId: string;
}

export function revisionToken(key: Buffer, r: RevisionIdentity): string {
  return `${r.deploymentId}.${r.revisionId}.${mac(key, r)}`;
}

/** The revision a token was made for, or null when it was not made with `key`. */
export function checkRevisionToken(key: Buffer, token: string): RevisionIdentity | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => p === '')) return null;
  const [deploymentId, revisionId, given] = parts as [string, string, string];
  const expected = Buffer.from(mac(key, { deploymentId, revisionId }));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected) ? { deploymentId, revisionId } : null;
}

function mac(key: Buffer, r: RevisionIdentity): string {
  return createHmac('sha256', key).update(`revision:${r.deploymentId}:${r.revisionId}`).digest('base64url');
}
