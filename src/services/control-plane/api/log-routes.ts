import type { Hono } from 'hono';
import type { Logger } from 'pino';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { buildLogFeed } from '../builds/build-log-feed.ts';
import type { DeploymentLogs, LogEntry, LogQuery } from '../serving/runtime-logs.ts';
import type { DeploymentService } from '../service.ts';
import { checked } from '../../shared/json-body.ts';
import type { ControlPlaneEnv } from './auth.ts';
import { ApiError } from '../errors.ts';
import { buildLogQuery, logsQuery } from './schemas.ts';

/**
 * The two logs of the API: a revision's build log (`.../revisions/{rev}/build_log`, its steps and text) and a
 * deployment's runtime log (`.../logs`, its process's output). Both check the deployment is the caller's first (404
 * otherwise, as every deployment read), and with `?follow=true` answer server-sent events: the build log until the
 * build's status is final, the runtime log until the client leaves or the deployment is deleted.
 */
export interface LogRoutesDeps {
  readonly service: DeploymentService;
  /** Null: this control plane runs no processes (records only): the runtime log is always empty. */
  readonly logs: DeploymentLogs | null;
  readonly log: Logger;
  /** How often a followed build log reads the store; default 250 ms. */
  readonly buildLogPollMs?: number;
}

const KEEP_ALIVE_MS = 15_000;
/** Lines a slow follower may fall behind before the oldest of them are skipped (it is told how many). */
const FOLLOW_BACKLOG = 2000;

export function logRoutes(api: Hono<ControlPlaneEnv>, deps: LogRoutesDeps): void {
  const { service, logs } = deps;

  api.get('/deployments/:id/revisions/:revisionId/build_log', async (c) => {
    const [tenant, id, revisionId] = [c.get('tenantId'), c.req.param('id'), c.req.param('revisionId')];
    const { follow } = checked(buildLogQuery, c.req.query(), 'query');
    const answer = await service.buildLog(tenant, id, revisionId);
    if (!follow) return c.json(answer);
    return streamSSE(c, async (stream) => {
      const stop = new AbortController();
      stream.onAbort(() => stop.abort());
      // Gone (the deployment or revision deleted meanwhile): the feed ends saying so; any other failure ends it here.
      const read = () =>
        service.revisionRecord(tenant, id, revisionId).catch((err: unknown) => {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        });
      try {
        for await (const e of buildLogFeed(read, { pollMs: deps.buildLogPollMs, signal: stop.signal }))
          await stream.writeSSE({ event: e.event, data: JSON.stringify(e.data) });
      } catch (err) {
        deps.log.warn({ err: (err as Error).message, deploymentId: id, revisionId }, 'build log follow ended');
        await stream.writeSSE({ event: 'error', data: JSON.stringify({ detail: 'Store unavailable; retry later.' }) });
      }
    });
  });

  api.get('/deployments/:id/logs', async (c) => {
    const id = c.req.param('id');
    const q = checked(logsQuery, c.req.query(), 'query');
    await service.requireOwn(c.get('tenantId'), id);
    // A reconnecting EventSource sends the last id it saw.
    const lastEventId = c.req.header('last-event-id');
    const query: LogQuery = {
      since: q.since ?? (lastEventId && /^\d{1,16}$/.test(lastEventId) ? { cursor: Number(lastEventId) } : undefined),
      limit: q.limit,
    };
    if (q.follow) return streamSSE(c, (stream) => follow(stream, logs, id, query));
    const found = (await logs?.read(id, query)) ?? [];
    const cursor = query.since && 'cursor' in query.since ? String(query.since.cursor) : null;
    return c.json({ deployment_id: id, logs: found, next_cursor: found.at(-1)?.id ?? cursor });
  });
}

/** The backlog, then every new line as it comes, a comment every 15 s to keep proxies from closing an idle stream. */
async function follow(stream: SSEStreamingApi, logs: DeploymentLogs | null, id: string, query: LogQuery) {
  const queue: LogEntry[] = [];
  let skipped = 0;
  let ended = false;
  let wake: (() => void) | null = null;
  const unsubscribe =
    logs?.subscribe(id, (entry) => {
      if (entry === null) ended = true;
      else if (queue.push(entry) > FOLLOW_BACKLOG) {
        queue.shift();
        skipped++;
      }
      wake?.();
    }) ?? (() => undefined);
  // Read after subscribing: a line printed in between is in both, and sent once (ids only grow).
  const backlog = (await logs?.read(id, query)) ?? [];
  stream.onAbort(() => {
    ended = true;
    wake?.();
  });
  try {
    const send = (e: LogEntry) => stream.writeSSE({ event: 'log', id: e.id, data: JSON.stringify(e) });
    for (const e of backlog) await send(e);
    let last = backlog.at(-1)?.id ?? null;
    while (!ended) {
      if (queue.length === 0) {
        const idle = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), KEEP_ALIVE_MS);
          wake = () => (clearTimeout(timer), resolve(false));
        });
        wake = null;
        if (idle) await stream.write(': keep-alive\n\n');
        continue;
      }
      if (skipped > 0) {
        await stream.writeSSE({ event: 'skipped', data: JSON.stringify({ lines: skipped }) });
        skipped = 0;
      }
      const e = queue.shift()!;
      // Lines that arrived between the backlog's read and the subscription are sent once.
      if (last !== null && Number(e.id) <= Number(last)) continue;
      last = e.id;
      await send(e);
    }
    if (!stream.aborted)
      await stream.writeSSE({ event: 'end', data: JSON.stringify({ reason: 'deployment deleted' }) });
  } finally {
    unsubscribe();
  }
}
