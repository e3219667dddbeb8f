import type { RequestAuth } from '../auth/authenticate.ts';
import type { ServerContext } from '../context.ts';
import { readableThread } from './thread-access.ts';
import type { EndReason, EventMatch, EventSink, ReaderState } from './thread-events.ts';
import type { ProtocolThread } from './threads.ts';

/**
 * Readers that come before their thread exists. The official server makes a thread's protocol record on first use,
 * so a subscription to a thread id nobody made yet is accepted and delivers the run started next (the SDK's
 * `thread.subscribe(...)` before `thread.run.start(...)`). Who may read a thread is only known once it exists: such a
 * reader waits (it gets nothing), and once a run made the thread it is admitted (the run's events so far, then the
 * live ones) if the thread is readable by it, or its stream ends, having delivered nothing.
 */

/** How `attachReader` went: following (at once or waiting), or the thread exists and is not the caller's. */
export type Attached = 'following' | 'refused';

/**
 * Attaches `sink` to `thread`'s events for `auth`: at once if the thread exists and is readable, waiting if it does
 * not exist yet, not at all if it exists and is not the caller's. `replay` runs, in the same tick as the attachment,
 * when the reader follows at once (the held events it wants are its to send).
 */
export async function attachReader(
  ctx: ServerContext,
  thread: ProtocolThread,
  auth: RequestAuth,
  reader: { sink: EventSink; match: EventMatch; onEnd: (reason: EndReason) => void; replay?: () => void },
): Promise<Attached> {
  if ((await ctx.store.getThread(thread.threadId)) !== null) {
    if ((await readableThread(auth, ctx, thread.threadId)) === null) return 'refused';
    reader.replay?.();
    thread.events.follow(reader.sink, reader.match, reader.onEnd);
    return 'following';
  }
  waitForThread(thread, auth, reader.sink, reader.match, reader.onEnd);
  // A run may have made the thread while this looked: then nobody would come back to admit the reader.
  await settleEarlyReader(ctx, thread, reader.sink);
  return 'following';
}

/** Follows `thread` as a waiting reader of `auth` (a WebSocket session does from its handshake on). */
export function waitForThread(
  thread: ProtocolThread,
  auth: RequestAuth,
  sink: EventSink,
  match: EventMatch,
  onEnd: (reason: EndReason) => void,
): void {
  thread.early.set(sink, auth);
  thread.events.follow(sink, match, onEnd, true);
}

/** The reader leaves (its connection closed). */
export function leaveThread(thread: ProtocolThread, sink: EventSink): void {
  thread.early.delete(sink);
  thread.events.detach(sink);
}

/** What becomes of a waiting reader once its thread exists: it may read it, or not. */
export interface Verdict {
  readonly auth: RequestAuth;
  readonly readable: boolean;
}

/**
 * Whether the waiting reader `sink` may read the thread, if the thread exists now; null while it does not (or the
 * reader is not waiting). `apply` acts on it, in a later tick.
 */
export async function judgeEarlyReader(
  ctx: ServerContext,
  thread: ProtocolThread,
  sink: EventSink,
): Promise<Verdict | null> {
  const auth = thread.early.get(sink);
  if (auth === undefined || thread.events.readerState(sink) !== 'waiting') return null;
  if ((await ctx.store.getThread(thread.threadId)) === null) return null;
  let readable = false;
  try {
    readable = (await readableThread(auth, ctx, thread.threadId)) !== null;
  } catch {
    // an authorization handler that refuses: not readable
  }
  return { auth, readable };
}

/** Admits or refuses the reader as `verdict` says (unless it left or was settled meanwhile); where it stands then. */
export function applyVerdict(thread: ProtocolThread, sink: EventSink, verdict: Verdict | null): ReaderState {
  if (verdict === null || thread.early.get(sink) !== verdict.auth) return thread.events.readerState(sink);
  thread.early.delete(sink);
  if (verdict.readable) thread.events.admit(sink);
  else thread.events.refuse(sink);
  return thread.events.readerState(sink);
}

/**
 * If the thread exists now, admits the waiting reader `sink` (the thread is readable by it) or refuses it; resolves
 * to where the reader stands then (still waiting while the thread does not exist).
 */
export async function settleEarlyReader(
  ctx: ServerContext,
  thread: ProtocolThread,
  sink: EventSink,
): Promise<ReaderState> {
  return applyVerdict(thread, sink, await judgeEarlyReader(ctx, thread, sink));
}

/** A run made (or found) the thread: every reader that came before it is admitted or refused. */
export async function settleEarlyReaders(ctx: ServerContext, thread: ProtocolThread): Promise<void> {
  await Promise.all([...thread.early.keys()].map((sink) => settleEarlyReader(ctx, thread, sink)));
}
