/**
 * The benchmark's own Redis: a private `redis-server` on a free loopback port, pinned to the load generator's CPU, so
 * the process under test keeps its core to itself. Against the machine's shared Redis, which no one may pin, the
 * kernel often woke Redis on the proxy's core each time the proxy wrote a script to it, and every Redis target lost
 * the time Redis ran there: Redis was measured as part of the proxy. In production Redis runs on a host of its own.
 * Stopped by its pid when the run ends.
 */
import { spawnSync } from 'node:child_process';
import { startRedis, type RedisProcess } from '../../support/redis-server.ts';

/** A private, pinned Redis; null where `redis-server` is not installed (the caller then uses the shared one). */
export async function startPrivateRedis(cpu: number | string | null): Promise<RedisProcess | null> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return null;
  const server = await startRedis();
  if (cpu !== null) spawnSync('taskset', ['-pc', String(cpu), String(server.pid)]);
  return server;
}
