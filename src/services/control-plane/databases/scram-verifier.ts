import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/**
 * A password as PostgreSQL stores it for scram-sha-256 (RFC 5802/7677):
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. Sent in
 * `CREATE/ALTER ROLE ... PASSWORD` instead of the password itself, so the
 * password appears in no server log (log_statement) or pg_stat_activity.
 */
const ITERATIONS = 4096;

export function scramVerifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
