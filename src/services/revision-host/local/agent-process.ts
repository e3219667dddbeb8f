import { register } from 'node:module';
import pino from 'pino';
import type { Redis } from 'ioredis';
import { listen, type Listening } from '../../../listen/listen.ts';
import { createLogger } from '../../../log.ts';
import { closeRedis, createRedisClient, SERVICE_REDIS } from '../../../redis-client.ts';
import type { AgentServer } from '../../agent-server/app.ts';
import { onMessages, openChildChannel, writeMessage } from './channel.ts';
import { rememberedKeyAnswers } from '../key-answers.ts';
import { loadFailure, startAgentServer } from '../start-agent-server.ts';
import type { FromChild, ProcessControl, ToChild } from './protocol.ts';

/**
 * The entry of one revision's process (forked by local-process-host.ts, run
 * with tsx so an app's TypeScript loads). It waits for its `start` message,
 * loads the app's Agent Server, serves on the listening socket the host
 * handed it (fd `listenFd`) and reports `ready`, or `failed` with one line (over the channel at
 * fd 3, channel.ts). Its log goes to stdout as JSON
 * lines (the parent adds the deployment and revision). API keys are checked
 * by the host over the channel (key-answers.ts remembers its answers briefly):
 * app code shares this process, so it holds no credential of the registry;
 * its Redis is a socket the host forwards as its deployment's own user, with
 * no credential here. Its data is in the PostgreSQL of DATABASE_URI when its environment has one (the deployment's
 * own database), else in that Redis, else in memory (open-storage.ts). SIGTERM, SIGINT or a
 * `stop` message close the listener, let open requests and streams finish
 * for up to the drain, then end the runs and exit; so does losing the parent.
 */

// Bare imports of @langchain/* that the app cannot resolve come from the gateway's installation (see the hook file).
register('../fallback-resolve.mjs', import.meta.url);

const channel = openChildChannel();
const send = (m: FromChild) => writeMessage(channel, m);
/** Messages of the host, by type (the channel has one reader: app code gets no `process.on('message')` of them). */
const handlers = new Map<ToChild['type'], (m: ToChild) => void>();
onMessages(channel, (m) => {
  const type = (m as { type?: unknown } | null)?.type;
  if (typeof type === 'string') handlers.get(type as ToChild['type'])?.(m as ToChild);
});

async function main(control: ProcessControl): Promise<void> {
  const log = createLogger(control.logLevel, pino.destination({ sync: true }));
  let redis: Redis | null = null;
  const redisClient = () => {
    if (control.redisSocket === null) return null;
    return (redis = createRedisClient(
      { path: control.redisSocket },
      {
        ...SERVICE_REDIS,
        // The deployment's user may not run INFO (it tells about the whole server).
        readyCheck: false,
        onError: (err) => log.warn({ err: err.message }, 'redis error'),
      },
    ));
  };
  const verifyApiKey = rememberedKeyAnswers(askHost());
  let server: AgentServer;
  try {
    server = await startAgentServer({
      configPath: control.configPath,
      org: control.org,
      dataPrefix: control.dataPrefix,
      heartbeatMs: control.heartbeatMs,
      ttlSweepMs: control.ttlSweepMs,
      webhookHostsAllowed: control.webhookHostsAllowed,
      verifyApiKey,
      redis: redisClient,
      log,
    });
  } catch (err) {
    send({ type: 'failed', reason: loadFailure(err, control.configPath, control.sourcePrefix ?? '') });
    log.flush();
    process.exit(3);
  }
  let listening: Listening;
  try {
    listening = await listen(server.app, { fd: control.listenFd });
    server.sockets.attach(listening.server);
  } catch (err) {
    send({ type: 'failed', reason: `could not serve on its socket: ${(err as Error).message}` });
    log.flush();
    process.exit(3);
  }
  let stopping = false;
  const stop = async (drainMs: number) => {
    if (stopping) return;
    stopping = true;
    log.info({ drainMs }, 'draining');
    await listening.close(drainMs);
    await server.close();
    if (redis) await closeRedis(redis);
    log.info('stopped');
    process.exit(0);
  };
  handlers.set('stop', (m) => m.type === 'stop' && void stop(m.drainMs));
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(10_000));
  channel.on('close', () => void stop(0));
  send({ type: 'ready', graphs: server.graphs });
}

/** The host holds the key registry: ask it (a question unanswered in 5 s rejects). */
function askHost(): (key: string) => Promise<string | null> {
  let next = 0;
  const waiting = new Map<number, (org: string | null) => void>();
  handlers.set('verified', (m) => {
    if (m.type !== 'verified') return;
    waiting.get(m.id)?.(m.org);
    waiting.delete(m.id);
  });
  return (key) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      const timer = setTimeout(() => (waiting.delete(id), reject(new Error('no answer'))), 5000);
      waiting.set(id, (org) => (clearTimeout(timer), resolve(org)));
      send({ type: 'verify', id, key });
    });
}

handlers.set('start', (m) => {
  handlers.delete('start');
  if (m.type === 'start') void main(m);
});
// Losing the host before the start: nothing to serve.
channel.on('close', () => handlers.has('start') && process.exit(0));
