import type { Context } from 'hono';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { invalid } from '../../errors.ts';

/** How the OpenAPI document describes the header. */
export const LAST_EVENT_ID =
  'The id of the last event received (ids count from 0): the stream resumes with the event after it. "-1" (what React useStream sends to join) or "-": from the oldest event still held.';

/**
 * The `Last-Event-ID` header of a resuming stream as the number of frames already seen: frames are numbered from 0, so
 * after frame `n` the stream goes on with frame `n + 1`. `-1` and `-` ask for every frame still held (0); undefined
 * when absent. Anything else answers 422 naming the header.
 */
export function lastEventId(c: Context<AgentEnv>): number | undefined {
  const value = c.req.header('last-event-id')?.trim();
  if (value === undefined || value === '') return undefined;
  if (value === '-' || value === '-1') return 0;
  if (!/^\d{1,15}$/.test(value)) {
    throw invalid({
      loc: ['header', 'last-event-id'],
      msg: 'Last-Event-ID must be the id of an event of this stream (a whole number from 0), or -1 for every event still held',
      type: 'value_error',
    });
  }
  return Number(value) + 1;
}
