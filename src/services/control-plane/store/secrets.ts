import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

/**
 * Secrets at rest: AES-256-GCM, a fresh 96-bit IV per value, the secret's
 * owner (`<deployment id>:<name>`) as additional data so a ciphertext cannot
 * be moved to another deployment or name. Stored as
 * `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url); the key id (first bytes
 * of the key's SHA-256) tells a wrong key from a damaged value.
 */
export class SecretBox {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new TypeError('SecretBox needs a 32-byte key');
    this.keyId = createHash('sha256').update(key).digest('base64url').slice(0, 8);
  }

  /** A box with a random key: what a development setup without SECRETS_KEY gets (values do not survive a restart). */
  static ephemeral(): SecretBox {
    return new SecretBox(randomBytes(32));
  }

  /** A key of its own for `purpose` (HMAC-SHA256 of this box's key): never the box's key itself. */
  derive(purpose: string): Buffer {
    return createHmac('sha256', this.key).update(`derive:${purpose}`).digest();
  }

  seal(value: string, owner: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(owner));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return [
      'v1',
      this.keyId,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      body.toString('base64url'),
    ].join('.');
  }

  /** The value, or throws SecretError when the key differs or the value was altered. */
  open(sealed: string, owner: string): string {
    const [version, keyId, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined)
      throw new SecretError('not a sealed secret');
    if (keyId !== this.keyId)
      throw new SecretError(`sealed with another key (${keyId}); this process has ${this.keyId}: check SECRETS_KEY`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(owner));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch (err) {
      throw new SecretError('sealed value altered or not for this owner', { cause: err });
    }
  }
}

export class SecretError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SecretError';
  }
}

export const secretOwner = (deploymentId: string, name: string) => `${deploymentId}:${name}`;
