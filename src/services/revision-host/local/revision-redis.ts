import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { RedisBudget } from './redis-budget.ts';
import { startRedisForward } from './redis-forward.ts';

/**
 * A revision's way to its Redis: a folder the host makes for it (0700, the
 * host's), holding the socket of a forwarder (redis-forward.ts) that
 * authenticates as the deployment's user, within the deployment's byte
 * budget (redis-budget.ts). The process gets the socket's path, never a URL
 * or a password; the sandbox gets the folder (launch.ts), removed with the
 * process.
 */
export interface RevisionRedisAccess {
  /** REDIS_URL's host, port, db and TLS with the deployment user's credentials (deployment-redis-users.ts). */
  readonly url: string;
  /** The bytes the deployment's keys use now, measured with the platform's client (measureRedisBytes). */
  readonly measure: () => Promise<number>;
}

/** The operator's bounds (DEPLOYMENT_REDIS_*, docs/configuration.md). */
export interface RevisionRedisLimits {
  readonly maxConnections: number;
  readonly idleMs: number;
  readonly maxRequestBytes: number;
  readonly maxBytes: number;
  readonly measureMs: number;
}

export const DEFAULT_REVISION_REDIS_LIMITS: RevisionRedisLimits = {
  maxConnections: 16,
  idleMs: 300_000,
  maxRequestBytes: 16 * 1024 * 1024,
  maxBytes: 256 * 1024 * 1024,
  measureMs: 30_000,
};

export interface RevisionRedis {
  /** The folder to give the sandbox. */
  readonly dir: string;
  /** What the process connects to (ioredis `path`). */
  readonly socketPath: string;
  close(): Promise<void>;
}

export async function openRevisionRedis(
  access: RevisionRedisAccess,
  limits: RevisionRedisLimits,
  log: Logger,
): Promise<RevisionRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'revision-redis-'));
  const budget = new RedisBudget({
    maxBytes: limits.maxBytes,
    intervalMs: limits.measureMs,
    measure: access.measure,
    log,
  });
  try {
    await budget.start();
    const forward = await startRedisForward({
      socketPath: join(dir, 'redis.sock'),
      target: { url: access.url },
      maxConnections: limits.maxConnections,
      idleMs: limits.idleMs,
      maxRequestBytes: limits.maxRequestBytes,
      budget,
      log,
    });
    let closed: Promise<void> | null = null;
    return {
      dir,
      socketPath: forward.socketPath,
      close: () =>
        (closed ??= (async () => {
          budget.close();
          await forward.close();
          rmSync(dir, { recursive: true, force: true });
        })()),
    };
  } catch (err) {
    budget.close();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
