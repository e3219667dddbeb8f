import cluster from 'node:cluster';
import { startGateway } from '../gateway.ts';
import { createLogger, destinationOf, silenceLogger } from '../log.ts';
import { installProcessGuards } from '../process/guards.ts';
import { loadSettings } from '../settings/settings.ts';
import { WORKER_SLOT_VARIABLE } from '../workers/messages.ts';
import { runPrimary } from '../workers/primary.ts';
import { runEdgeWorker } from '../workers/worker.ts';
import { exitWhenStdoutIsLost, type ErrorSource, type Output } from '../process/output.ts';
import { checkPortsFree, listenFailure } from './ports.ts';

/**
 * `gateway start`: serve until SIGTERM/SIGINT, then drain (DRAIN_SECONDS) and
 * exit 0; a second signal exits at once. SIGHUP reloads the rule file. An unhandled rejection is logged and
 * the gateway keeps serving; an uncaught exception is logged and exits 70 (see process/guards.ts).
 * With WORKERS > 1 this process is the primary of that many edge workers (src/workers/), each of which runs this
 * command again as a cluster worker.
 * The one reader of the environment: the settings (the edge's and the bundled services') are loaded here, once, and
 * handed down.
 */
export async function start(_out: Output, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const settings = loadSettings(env);
  const log = createLogger(settings.logLevel, settings.logFormat);
  exitWhenStdoutIsLost([process.stdout, destinationOf(log) as ErrorSource | undefined], () => silenceLogger(log));
  installProcessGuards(log);
  // Set by the primary (workers/pool.ts) in the environment it forks a worker with.
  const slot = env[WORKER_SLOT_VARIABLE];
  if (cluster.isWorker && slot !== undefined) return runEdgeWorker(settings, log, Number(slot));
  await checkPortsFree(settings);
  if (settings.workers > 1) {
    if (settings.redisUrl !== null || !settings.workersAuto) return runPrimary(settings, log).catch(asSetting);
    log.warn(
      { cpus: settings.workers },
      'WORKERS=auto without REDIS_URL: one edge process (in-memory buckets are per process; set REDIS_URL to use every CPU)',
    );
  }
  const gateway = await startGateway(settings, log).catch(asSetting);
  process.on('SIGHUP', () => gateway.reload());
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const force = () => process.exit(1);
  process.once('SIGTERM', force);
  process.once('SIGINT', force);
  log.info({ signal, drainSeconds: settings.drainMs / 1000 }, 'draining');
  await gateway.close();
  log.info('stopped');
  log.flush();
  return 0;

  /** A port taken between checkPortsFree and the listener: still a setting to change, not a crash. */
  function asSetting(err: unknown): never {
    throw listenFailure(err, settings) ?? err;
  }
}
