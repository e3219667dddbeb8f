import type { RequestAuth } from '../auth/authenticate.ts';
import { matchesFilter } from '../auth/filters.ts';
import type { ServerContext } from '../context.ts';
import type { Thread } from '../store/records.ts';

/** The thread, if it exists and `auth`'s user may read it (the authorization handlers' `threads` `read`); else null. */
export async function readableThread(
  auth: RequestAuth,
  { store }: ServerContext,
  threadId: string,
): Promise<Thread | null> {
  const filter = await auth.authorize('threads', 'read', { thread_id: threadId });
  const thread = await store.getThread(threadId);
  return thread !== null && matchesFilter(thread.metadata, filter) ? thread : null;
}
