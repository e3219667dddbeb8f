import { integer, optionalUrl, type Env } from './env.ts';

/** The Agent Server's PostgreSQL: where its durable data lives when set. */
export interface DatabaseSettings {
  /** DATABASE_URI: a postgres:// or postgresql:// URL (the official Agent Server's name). */
  readonly uri: string;
  /**
   * DATABASE_POOL_SIZE: most connections one Agent Server opens to it (default 5, 1-100). Several servers on one
   * PostgreSQL each take up to this many of its `max_connections` (100 by default), and one more for a moment at start
   * (the migration lock).
   */
  readonly poolSize: number;
}

export const DEFAULT_DATABASE_POOL_SIZE = 5;

/** DATABASE_URI and DATABASE_POOL_SIZE, checked; null when DATABASE_URI is unset. */
export function databaseSettings(env: Env): DatabaseSettings | null {
  const uri = optionalUrl(env, 'DATABASE_URI', ['postgres:', 'postgresql:']);
  const poolSize = integer(env, 'DATABASE_POOL_SIZE', DEFAULT_DATABASE_POOL_SIZE, 1, 100);
  return uri === null ? null : Object.freeze({ uri, poolSize });
}
