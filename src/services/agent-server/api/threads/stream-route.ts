import { bringToThreadStream } from '../../relay/remote-runs.ts';
import type { ServerContext } from '../../context.ts';
import { LAST_EVENT_ID, lastEventId } from '../runs/last-event-id.ts';
import { operation, param, type Operation } from '../operations.ts';
import { z } from 'zod';
import { THREAD_STREAM_MODES } from '../../runs/stream-modes.ts';
import { errorSchema, modeList } from '../common-schemas.ts';
import { sseResponse } from '../sse.ts';
import { visibleThread } from './thread-access.ts';

/**
 * `GET /threads/{thread_id}/stream` (the JS client's `threads.joinStream`):
 * the events of the thread's runs, one run after the other, until the client
 * leaves or the thread is deleted (runs/thread-broadcasts.ts says what each mode
 * carries). It follows the runs of this server process, and the run of the
 * thread going on on another server when the reader opens it (relay/remote-runs.ts).
 * It answers `Location` with itself, so the public client reconnects there
 * by itself with `Last-Event-ID` when the connection breaks.
 */
const threadJoinStream = z.object({
  stream_mode: modeList(THREAD_STREAM_MODES).describe(
    'What to follow: `run_modes` (every event of the runs, and `run_done` after each), `lifecycle` (only `metadata` and `run_done`), `state_update` (only `values`, the state after each step). One mode or a JSON array. Default: `run_modes`.',
  ),
  stream_modes: modeList(THREAD_STREAM_MODES).describe(
    'The same as `stream_mode` (the name in the public API reference).',
  ),
});

export function threadStreamOperation(ctx: ServerContext): Operation {
  const { runner, heartbeatMs } = ctx;
  return operation({
    tag: 'Threads',
    method: 'get',
    path: '/threads/{thread_id}/stream',
    operationId: 'join_thread_stream',
    summary: 'Follow a thread',
    description:
      'Server-sent events of every run on the thread, one run after the other, each with its `id` (numbered per thread). `run_done` (`{run_id, status}`) follows each run. The stream stays open between runs (`: heartbeat` comments) until the client leaves or the thread is deleted. With `Last-Event-ID`: every event after that one that is still held, then the rest; `-`: every event still held. Without: from the moment of joining.',
    query: threadJoinStream,
    headers: { 'Last-Event-ID': LAST_EVENT_ID },
    responses: {
      200: {
        description: 'Server-sent events.',
        contentType: 'text/event-stream',
        headers: {
          Location: 'This stream (/threads/<thread_id>/stream), where a client that lost it resumes (Last-Event-ID).',
        },
      },
      401: { description: 'Not authenticated.', schema: errorSchema },
      404: { description: 'Unknown thread (or not visible to the caller).', schema: errorSchema },
      422: { description: 'Invalid request.', schema: errorSchema },
    },
    async handler(c, { query }) {
      const thread = await visibleThread(c, ctx, param(c, 'thread_id'));
      const seen = lastEventId(c);
      const reader = runner.threads.follow(
        thread.thread_id,
        query.stream_mode ?? query.stream_modes ?? ['run_modes'],
        seen,
      );
      await bringToThreadStream(ctx, thread.thread_id); // a run of the thread on another server: its frames too
      return sseResponse(reader.frames, {
        headers: { Location: `/threads/${thread.thread_id}/stream` },
        heartbeatMs,
        signal: c.req.raw.signal,
        onCancel: reader.leave,
      });
    },
  });
}
