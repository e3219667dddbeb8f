/**
 * Starts the edge benchmark's processes: the upstream the proxies forward to, and each target that a scenario of this
 * run uses (a second upstream for `direct`, the bare proxy, the edges, the fastify peer), pinned where the process
 * under test runs.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ALT_ROOT,
  EDGE_TARGETS,
  edgePrefix,
  FAIL_MODE,
  isInFlightTarget,
  isWorkersTarget,
  ONE_KEY,
  peerNamespace,
  ROOT,
  ROTATING,
  runs,
  STORE_TIMEOUT_MS,
  usesRedis,
  WORKERS_N,
  type EdgeTarget,
  type TargetName,
} from './edge-settings.ts';
import { freePort, startService, type Service } from './processes.ts';

export interface TargetOptions {
  /** The RULES_DIR the edges use: a copy of rules/us.yaml with the one-key rule first. */
  readonly rulesDir: string;
  /** The same plus an in-flight guard (IN_FLIGHT_GUARD), for the `-inflight` targets. */
  readonly inFlightRulesDir: string;
  /** The same for the other checkout (edge-redis-alt), from its own rules/us.yaml. */
  readonly altRulesDir: string;
  /** `node --cpu-prof` flags for a target that is profiled. */
  readonly profileFlags: (target: TargetName) => string[];
  readonly proxyCpu: number | null;
  readonly loadCpu: number | null;
  /** Where the workers targets run (workersPinning): a CPU list, or null for anywhere. */
  readonly workersCpus: string | null;
  /** The Redis of the Redis targets. */
  readonly redisUrl: string;
}

const tsx = ['--import', 'tsx'];

async function startEdge(target: EdgeTarget, upstreamUrl: string, o: TargetOptions): Promise<Service> {
  // At LOG_LEVEL=warn the edge does not log where it listens: give it a port and wait for it to accept.
  const port = target === 'edge-redis-warn' ? await freePort() : undefined;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port ?? 0),
    ADMIN_PORT: '0',
    REGION: 'us',
    RULES_DIR: target === 'edge-redis-alt' ? o.altRulesDir : isInFlightTarget(target) ? o.inFlightRulesDir : o.rulesDir,
    LOG_LEVEL: target === 'edge-redis-warn' ? 'warn' : 'info',
    AGENT_SERVER_URL: upstreamUrl,
    CONTROL_PLANE_URL: upstreamUrl,
    KEY_PREFIX: edgePrefix(target),
    IDENTITY_SECRET: randomBytes(24).toString('base64url'),
    // closed: a store failure answers 503 and shows as non-2xx, instead of quietly falling back to memory buckets.
    FAIL_MODE,
  };
  for (const name of ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'TRUST_PROXY', 'STORE_TIMEOUT_MS']) delete env[name];
  if (STORE_TIMEOUT_MS) env.STORE_TIMEOUT_MS = STORE_TIMEOUT_MS;
  if (usesRedis(target)) env.REDIS_URL = o.redisUrl;
  env.WORKERS = target === 'edge-workers-n' ? String(WORKERS_N) : '1';
  const root = target === 'edge-redis-alt' ? ALT_ROOT! : ROOT;
  return startService(
    target,
    [...startFlags(root), ...o.profileFlags(target), join(root, 'bin', 'gateway.js'), 'start'],
    env,
    isWorkersTarget(target) ? o.workersCpus : o.proxyCpu,
    port,
    // n workers (tsx each) start one after another on a busy machine.
    isWorkersTarget(target) ? 60_000 : undefined,
  );
}

/**
 * The node flags `npm start` gives the gateway in that tree (package.json's start script): the edge is measured as it
 * is run.
 */
function startFlags(root: string): string[] {
  const start =
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } }).scripts?.start ??
    '';
  return /^node (.*?)\s*bin\/gateway\.js start$/.exec(start)?.[1]?.split(/\s+/).filter(Boolean) ?? [];
}

/** The upstream and every target of this run, in this order; throws when one does not start. */
export async function startTargets(
  o: TargetOptions,
): Promise<{ upstream: Service; services: Map<TargetName, Service> }> {
  const services = new Map<TargetName, Service>();
  const upstream = await startService('upstream', [...tsx, 'bench/peers/upstream.ts'], process.env, o.loadCpu);
  if (runs('direct'))
    services.set(
      'direct',
      await startService('direct upstream', [...tsx, 'bench/peers/upstream.ts'], process.env, o.proxyCpu),
    );
  if (runs('bare-proxy')) {
    // The edge's node flags (npm start) and its pools' connection count (MAX_CONNECTIONS, inherited as the edges
    // inherit it): only the features differ.
    const env = { ...process.env, PORT: '0', UPSTREAM_URL: upstream.url };
    services.set(
      'bare-proxy',
      await startService(
        'bare proxy',
        [...startFlags(ROOT), ...o.profileFlags('bare-proxy'), ...tsx, 'bench/peers/bare-proxy.ts'],
        env,
        o.proxyCpu,
      ),
    );
  }
  for (const target of EDGE_TARGETS) if (runs(target)) services.set(target, await startEdge(target, upstream.url, o));
  if (runs('fastify-redis')) {
    const routes = [
      { prefix: '/bench', max: ONE_KEY.count, windowMs: ONE_KEY.perSeconds * 1000 },
      { prefix: '/', max: ROTATING.count, windowMs: ROTATING.perSeconds * 1000 },
    ];
    const env = {
      ...process.env,
      PORT: '0',
      UPSTREAM_URL: upstream.url,
      REDIS_URL: o.redisUrl,
      PEER_NAMESPACE: peerNamespace,
      PEER_ROUTES: JSON.stringify(routes),
    };
    services.set(
      'fastify-redis',
      await startService(
        'fastify peer',
        [...o.profileFlags('fastify-redis'), ...tsx, 'bench/peers/fastify-proxy.ts'],
        env,
        o.proxyCpu,
      ),
    );
  }
  return { upstream, services };
}
