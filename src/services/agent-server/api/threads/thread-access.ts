import type { Context } from 'hono';
import type { AgentEnv, RequestAuth } from '../../auth/authenticate.ts';
import { matchesFilter, type Action } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { conflict, notFound } from '../../errors.ts';
import type { Json, Thread, ThreadTtl } from '../../store/records.ts';
import { newId } from '../ids.ts';

/** The thread as answered: its TTL only when asked for (`include=ttl`), as the official server. */
export function threadJson({ ttl, ...thread }: Thread, includeTtl = false): Thread {
  return includeTtl && ttl !== undefined ? { ...thread, ttl } : thread;
}

/** A thread's TTL from a create or update's `ttl`, counted from now. */
export function threadTtl(request: { strategy: 'delete'; ttl: number }): ThreadTtl {
  return {
    strategy: request.strategy,
    ttl_minutes: request.ttl,
    expires_at: new Date(Date.now() + request.ttl * 60_000).toISOString(),
  };
}

/** Creates a thread after the `threads:create` handler saw (and maybe changed) it. */
export async function createThread(
  auth: RequestAuth,
  { store }: ServerContext,
  request: {
    thread_id?: string | null | undefined;
    metadata?: Json | null | undefined;
    if_exists?: 'raise' | 'do_nothing' | null | undefined;
    ttl?: { strategy: 'delete'; ttl: number } | null | undefined;
  },
): Promise<Thread> {
  const value: Json = {
    thread_id: request.thread_id ?? newId(),
    metadata: { ...request.metadata },
    if_exists: request.if_exists ?? 'raise',
  };
  const filter = await auth.authorize('threads', 'create', value);
  const id = String(value.thread_id);
  const existing = await store.getThread(id);
  if (existing !== null) {
    // `do_nothing` answers the existing thread only to a caller who may read it: the create handler's filter alone
    // (often none: it only stamps the owner) would hand anyone another user's thread. Otherwise 409, as for a clash.
    if (request.if_exists === 'do_nothing' && matchesFilter(existing.metadata, filter)) {
      const readable = await auth.authorize('threads', 'read', { thread_id: id });
      if (matchesFilter(existing.metadata, readable)) return existing;
    }
    throw conflict(`Thread ${id} already exists`);
  }
  const now = new Date().toISOString();
  const thread: Thread = {
    thread_id: id,
    created_at: now,
    updated_at: now,
    state_updated_at: now,
    metadata: (value.metadata as Json) ?? {},
    status: 'idle',
    values: null,
    config: {},
    interrupts: {},
    ...(request.ttl ? { ttl: threadTtl(request.ttl) } : {}),
  };
  await store.putThread(thread);
  return thread;
}

/**
 * The thread, if it exists and the caller may `action` it; 404 otherwise.
 * `value` is what the authorization handler sees (and may change in place).
 */
export async function visibleThread(
  c: Context<AgentEnv>,
  { store }: ServerContext,
  id: string,
  action: Action = 'read',
  value: Json = { thread_id: id },
): Promise<Thread> {
  const filter = await c.get('auth').authorize('threads', action, value);
  const thread = await store.getThread(id);
  if (thread === null || !matchesFilter(thread.metadata, filter)) throw notFound('Thread', id);
  return thread;
}
