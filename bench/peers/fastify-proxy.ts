/**
 * The peer the edge is measured against: what a Node user would assemble
 * from the shelf. fastify + @fastify/rate-limit (Redis store on ioredis, or
 * its in-memory store when REDIS_URL is unset) + @fastify/http-proxy to one
 * upstream, each route with the same limit as the edge's rule for that path.
 * Used by bench/edge.ts only.
 *
 * Environment:
 *   PORT            listen port on loopback (default 0 = any free port)
 *   UPSTREAM_URL    where every route forwards (required)
 *   REDIS_URL       rate-limit store; unset = @fastify/rate-limit's memory store
 *   PEER_NAMESPACE  key prefix in Redis (default "fastify-rate-limit-"); the benchmark deletes the keys under it
 *   PEER_ROUTES     JSON [{ "prefix": "/bench", "max": 100000000, "windowMs": 1000 }, ...]; the first entry
 *                   with prefix "/" is also the global limit
 *   PEER_LOG        pino level for fastify's request logging (default: off, fastify's own default)
 *   PEER_AUTOPIPELINING  "0" turns ioredis auto-pipelining off (default on, as the edge has it)
 *
 * Prints one JSON line `{"msg":"peer listening","port":N}` on stdout.
 */
import httpProxy from '@fastify/http-proxy';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { Redis } from 'ioredis';

interface Route {
  readonly prefix: string;
  readonly max: number;
  readonly windowMs: number;
}

const upstream = process.env.UPSTREAM_URL;
if (!upstream) throw new Error('UPSTREAM_URL is required');
const routes = JSON.parse(process.env.PEER_ROUTES ?? '[{"prefix":"/","max":1000,"windowMs":10000}]') as Route[];
const fallback = routes.find((r) => r.prefix === '/') ?? { prefix: '/', max: 1000, windowMs: 10_000 };
if (!routes.includes(fallback)) routes.push(fallback);

const redis = process.env.REDIS_URL
  ? new Redis(process.env.REDIS_URL, {
      enableAutoPipelining: process.env.PEER_AUTOPIPELINING !== '0',
      maxRetriesPerRequest: 1,
      connectTimeout: 500,
    })
  : undefined;

const app = Fastify({ logger: process.env.PEER_LOG ? { level: process.env.PEER_LOG } : false });

// Registered (and awaited) before the proxies: its onRoute hook must see their routes.
await app.register(rateLimit, {
  global: true,
  max: fallback.max,
  timeWindow: fallback.windowMs,
  // Counted per API key, like the edge's `by: api-key`; requests without one by client IP.
  keyGenerator: (req) => {
    const key = req.headers['x-api-key'];
    return typeof key === 'string' && key !== '' ? key : req.ip;
  },
  ...(redis ? { redis, nameSpace: process.env.PEER_NAMESPACE ?? 'fastify-rate-limit-' } : {}),
});

for (const route of routes) {
  await app.register(httpProxy, {
    upstream,
    prefix: route.prefix,
    rewritePrefix: route.prefix, // forward the path unchanged, as the edge does
    config: { rateLimit: { max: route.max, timeWindow: route.windowMs } },
  });
}

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const address = app.server.address();
console.log(
  JSON.stringify({ msg: 'peer listening', port: typeof address === 'object' && address ? address.port : null }),
);

async function stop(): Promise<void> {
  await app.close();
  await redis?.quit();
}

// A close that fails still ends the peer (the bench waits for it to exit), with the reason on stderr.
process.once('SIGTERM', () => {
  stop().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
