import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { KeyRegistryError } from './types.ts';

/**
 * API keys are `gwk_` + 32 random bytes (base64url). With 256 bits of
 * entropy a plain SHA-256 is enough to store them: there is nothing to
 * brute-force, and every process (edge, control plane, CLI) can hash a
 * presented key without sharing a secret.
 */
export const KEY_PREFIX = 'gwk_';
const KEY_SHAPE = /^gwk_[A-Za-z0-9_-]{43}$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function newKeyId(): string {
  return `key_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Whether the value has the shape of a key (`gwk_` + 43 base64url characters): anything else is no key of ours. */
export function canBeKey(value: string): boolean {
  return KEY_SHAPE.test(value);
}

/** Hex SHA-256 of a key, or null when the value cannot be a key (nothing to look up). */
export function keyHash(key: string): string | null {
  if (!canBeKey(key)) return null;
  return createHash('sha256').update(key).digest('hex');
}

/** Organisation and workspace ids: letters, digits, `.`, `_`, `-`, at most 64, starting with a letter or digit. */
export function checkName(what: 'organisation' | 'workspace', value: string): string {
  if (!NAME.test(value)) {
    throw new KeyRegistryError(
      'invalid_name',
      `${what} must be 1-64 letters, digits, ".", "_" or "-" (starting with a letter or digit), got "${value}"`,
    );
  }
  return value;
}
