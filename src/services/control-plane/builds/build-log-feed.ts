import { setTimeout as sleep } from 'node:timers/promises';
import { isTerminal } from '../revision-state.ts';
import type { StoredRevision } from '../types.ts';

/**
 * A build log followed as it grows (`?follow=true`): the revision is read from the store every `pollMs` (the build
 * may run in another gateway process; build-progress.ts writes there) and what changed becomes events: `status` when
 * the revision moves, `step` when a step starts or ends, `log` with the new text, and one `end` once the revision's
 * status is final, after which the feed stops.
 */
export type BuildLogEvent =
  | { readonly event: 'status'; readonly data: { status: string } }
  | { readonly event: 'step'; readonly data: NonNullable<StoredRevision['build_steps']>[number] }
  | { readonly event: 'log'; readonly data: { text: string } }
  | { readonly event: 'end'; readonly data: { status: string | null; status_message: string | null } };

export interface FeedOptions {
  readonly pollMs?: number;
  readonly signal?: AbortSignal;
}

export async function* buildLogFeed(
  read: () => Promise<StoredRevision | null>,
  { pollMs = 250, signal }: FeedOptions = {},
): AsyncGenerator<BuildLogEvent> {
  let status = '';
  let position = 0;
  const sent: string[] = [];
  while (!signal?.aborted) {
    const rev = await read();
    if (rev === null) {
      yield { event: 'end', data: { status: null, status_message: 'the revision was deleted' } };
      return;
    }
    if (rev.status !== status) {
      status = rev.status;
      yield { event: 'status', data: { status } };
    }
    const steps = rev.build_steps ?? [];
    for (const [i, step] of steps.entries()) {
      if (sent[i] === step.status) continue;
      sent[i] = step.status;
      yield { event: 'step', data: step };
    }
    const text = rev.build_log ?? '';
    const offset = rev.build_log_offset ?? 0;
    if (offset + text.length > position) {
      yield { event: 'log', data: { text: text.slice(Math.max(0, position - offset)) } };
      position = offset + text.length;
    }
    if (isTerminal(rev.status)) {
      yield { event: 'end', data: { status: rev.status, status_message: rev.status_message } };
      return;
    }
    await sleep(pollMs, undefined, { signal }).catch(() => undefined);
  }
}
