import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createAgentServer, type AgentServer } from '../agent-server/app.ts';
import { GraphLoadError } from '../agent-server/app-config.ts';
import type { ApiKeyVerifier } from '../agent-server/auth/authenticate.ts';
import { openAgentStorage } from '../agent-server/store/open-storage.ts';
import { databaseSettings } from '../../settings/database.ts';
import { compileErrors, describeCompileErrors } from './compile-errors.ts';

/**
 * A revision's Agent Server, loaded the same way wherever it runs (a local process: local/agent-process.ts; a pod:
 * kubernetes/pod-main.ts): its storage from its environment (the PostgreSQL of DATABASE_URI, the deployment's own,
 * else the Redis `redis` gives, else memory: open-storage.ts), the app's graphs and auth handler, and the operator's
 * settings as the host passed them (never from the process environment, which the deployment's env and secrets fill).
 * A load failure is one line for the deployment's owner (loadFailure).
 */
export interface AgentServerStart {
  /** The app config's absolute path. */
  readonly configPath: string;
  readonly org: string | null;
  readonly dataPrefix: string;
  readonly heartbeatMs: number;
  readonly ttlSweepMs: number;
  readonly webhookHostsAllowed: readonly string[];
  readonly verifyApiKey: ApiKeyVerifier;
  /** The deployment's Redis, when it has one (opened only if its storage needs it). */
  readonly redis: () => Redis | null;
  readonly log: Logger;
}

export async function startAgentServer(o: AgentServerStart): Promise<AgentServer> {
  const storage = await openAgentStorage({
    // The deployment's environment (its env and secrets, and the database the platform made for it).
    database: databaseSettings(process.env),
    redis: o.redis,
    redisPrefix: o.dataPrefix,
    log: o.log,
  });
  return createAgentServer({
    configPath: o.configPath,
    // The host gave the app's env as its build read it (the revision's record): never the folder's again.
    envGiven: true,
    verifyApiKey: o.verifyApiKey,
    // No organisation: no key is accepted (a deployment whose workspace has no owner).
    org: o.org ?? '\u0000none',
    log: o.log,
    heartbeatMs: o.heartbeatMs,
    ttlSweepMs: o.ttlSweepMs,
    webhooks: { allowed: o.webhookHostsAllowed },
    store: storage.store,
    checkpointer: storage.checkpointer,
    items: storage.items,
    relay: storage.relay,
  }).catch(async (err: unknown) => {
    await storage.close();
    throw err;
  });
}

/** Why the app did not load, in one line with its paths as the user knows them (relative to its folder). */
export function loadFailure(err: unknown, configPath: string, sourcePrefix: string): string {
  // A syntax error's first line is `Transform failed with 1 error:`: the line that says where and what follows it.
  const compiled = compileErrors(err, dirname(configPath), sourcePrefix);
  if (compiled.length > 0) {
    const key = err instanceof GraphLoadError ? `${err.key}: ` : '';
    return `${key}${describeCompileErrors(compiled)}`.slice(0, 1000);
  }
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n').find((l) => l.trim() !== '') ?? 'the app failed to load';
  // Where it sits on this host is not theirs to know.
  return line
    .replace(`${configPath}: `, '')
    .replaceAll(`${dirname(configPath)}/`, './')
    .slice(0, 1000);
}
