import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { register as registerTsxCommonJs } from 'tsx/cjs/api';
import { listen } from '../../../listen/listen.ts';
import { createLogger } from '../../../log.ts';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../../../redis-client.ts';
import { rememberedKeyAnswers } from '../key-answers.ts';
import { loadFailure, startAgentServer } from '../start-agent-server.ts';
import { ArtifactMismatch, fetchArtifact } from './fetch-artifact.ts';
import { askGateway } from './key-check-client.ts';
import { POD_APP_DIR, POD_ENV, POD_PORT } from './pod-contract.ts';
import { PodEnvError, readPodVariables, type PodVariables } from './pod-env.ts';
import { ArchiveRefused, unpackArtifact } from './unpack-artifact.ts';

/**
 * The entry of a revision's pod (`gateway revision-pod`, pod-contract.ts): reads its variables (POD_ENV), fetches its
 * build with the revision's token and checks its sha256 (fetch-artifact.ts), unpacks it into POD_APP_DIR
 * (unpack-artifact.ts), loads the app's Agent Server as a local revision's process does (start-agent-server.ts), asks
 * the gateway whether an API key is of its organisation (key-check-client.ts, answers remembered briefly), and serves
 * on 0.0.0.0:POD_PORT (`/ok` for the probes). SIGTERM or SIGINT drain it for up to 10 s, then it exits.
 *
 * Exit codes: 2 when it must not start (a variable missing, the artifact's sha256 not the expected one, an archive
 * that would leave its folder), 1 when the artifact could not be fetched, 3 when the app does not load.
 * REVISION_POD_PORT and REVISION_POD_APP_DIR override the port and folder (tests running the pod's command here).
 */
export const DRAIN_MS = 10_000;
const GATEWAY_MODULES = fileURLToPath(new URL('../../../../node_modules', import.meta.url));

export async function podMain(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let vars: PodVariables;
  try {
    vars = readPodVariables(env);
  } catch (err) {
    if (!(err instanceof PodEnvError)) throw err;
    process.stderr.write(`gateway revision-pod: ${err.message}\n`);
    return 2;
  }
  // The app shares this process: it gets none of the pod's own variables (its env and secrets stay).
  for (const name of Object.values(POD_ENV)) delete env[name];
  const { control } = vars;
  const log = createLogger(control.logLevel).child({
    deploymentId: control.deploymentId,
    revisionId: control.revisionId,
  });
  const appDir = env.REVISION_POD_APP_DIR ?? POD_APP_DIR;
  const port = env.REVISION_POD_PORT === undefined ? POD_PORT : Number(env.REVISION_POD_PORT);
  try {
    await fetchAndUnpack(vars, appDir);
  } catch (err) {
    if (!(err instanceof ArtifactMismatch || err instanceof ArchiveRefused)) {
      log.error({ reason: (err as Error).message }, 'revision not started');
      return 1;
    }
    log.error({ reason: err.message }, 'revision refused');
    return 2;
  }
  resolveFromGateway(env);
  let redis: Redis | null = null;
  const redisUrl = env.REDIS_URL;
  const redisClient = () =>
    redisUrl
      ? (redis = createRedisClient(redisUrl, {
          ...SERVICE_REDIS,
          readyCheck: false,
          onError: (e) => log.warn({ err: e.message }, 'redis error'),
        }))
      : null;
  const configPath = join(appDir, control.configPath);
  let server;
  try {
    server = await startAgentServer({
      configPath,
      org: control.org,
      dataPrefix: control.dataPrefix,
      heartbeatMs: control.heartbeatMs,
      ttlSweepMs: control.ttlSweepMs,
      webhookHostsAllowed: control.webhookHostsAllowed,
      verifyApiKey: rememberedKeyAnswers(askGateway(vars.keyCheckUrl, vars.token, control.org)),
      redis: redisClient,
      log,
    });
  } catch (err) {
    log.error({ reason: loadFailure(err, configPath, control.sourcePrefix) }, 'the app did not load');
    return 3;
  }
  const listening = await listen(server.app, port, '0.0.0.0');
  server.sockets.attach(listening.server);
  log.info({ url: listening.url, graphs: server.graphs }, 'revision serving');
  await untilSignal();
  log.info({ drainMs: DRAIN_MS }, 'draining');
  await listening.close(DRAIN_MS);
  await server.close();
  if (redis) await closeRedis(redis);
  log.info('stopped');
  log.flush();
  return 0;
}

/** The artifact into `appDir`, emptied first (a restarted container finds its emptyDir as the last one left it). */
async function fetchAndUnpack(vars: PodVariables, appDir: string): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'revision-artifact-'));
  try {
    const file = join(work, 'artifact.tar.gz');
    await fetchArtifact({ url: vars.artifactUrl, token: vars.token, sha256: vars.artifactSha256 }, file);
    await mkdir(appDir, { recursive: true });
    for (const name of await readdir(appDir)) await rm(join(appDir, name), { recursive: true, force: true });
    await unpackArtifact(file, appDir);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The app loads as a local revision's does (`node --import tsx`): tsx's CommonJS hook beside the ESM one bin/gateway.js
 * registered (an app without `"type": "module"` is CommonJS), and bare `@langchain/*` imports the app cannot resolve
 * come from the gateway's installation: the ESM hook, and NODE_PATH for CommonJS (read again: it was read when this
 * process started).
 */
function resolveFromGateway(env: NodeJS.ProcessEnv): void {
  registerTsxCommonJs();
  register('../fallback-resolve.mjs', import.meta.url);
  env.NODE_PATH = env.NODE_PATH ? `${env.NODE_PATH}:${GATEWAY_MODULES}` : GATEWAY_MODULES;
  (createRequire(import.meta.url)('node:module') as { _initPaths?: () => void })._initPaths?.();
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}
