import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox, SecretError } from '../../../src/services/control-plane/store/secrets.ts';

describe('SecretBox (AES-256-GCM)', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, for the same owner only; every seal differs', () => {
    const a = box.seal('hunter2', 'dep-1:PASSWORD');
    expect(box.open(a, 'dep-1:PASSWORD')).toBe('hunter2');
    expect(a).not.toContain('hunter2');
    expect(box.seal('hunter2', 'dep-1:PASSWORD')).not.toBe(a);
    expect(() => box.open(a, 'dep-2:PASSWORD')).toThrow(SecretError);
    expect(box.open(box.seal('', 'o'), 'o')).toBe('');
  });

  it('refuses an altered value and names a wrong key', () => {
    const sealed = box.seal('value', 'o');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[4]!, 'base64url');
    body[0]! ^= 1;
    parts[4] = body.toString('base64url');
    expect(() => box.open(parts.join('.'), 'o')).toThrow(/altered/);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'o')).toThrow(/another key .*SECRETS_KEY/);
    expect(() => box.open('plain text', 'o')).toThrow(/not a sealed secret/);
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow(/32-byte/);
  });
});
