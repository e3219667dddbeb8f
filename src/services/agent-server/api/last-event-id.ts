import type { Context } from 'hono';
import type { AgentEnv } from '../auth/authenticate.ts';
import { invalid } from '../errors.ts';

/** How the OpenAPI document describes the header. */
export const LAST_EVENT_ID =
  'The id of the last event received: the stream resumes with the event after it ("-": from the oldest event still held).';

/**
 * The `Last-Event-ID` header of a resuming stream as a frame number: the
 * stream goes on after that frame. `-` asks for every frame still held (0);
 * undefined when absent. Anything else answers 422 naming the header.
 */
export function lastEventId(c: Context<AgentEnv>): number | undefined {
  const value = c.req.header('last-event-id');
  if (value === undefined || value === '') return undefined;
  if (value === '-') return 0;
  if (!/^\d{1,15}$/.test(value)) {
    throw invalid({
      loc: ['header', 'last-event-id'],
      msg: 'Last-Event-ID must be the id of a frame of this stream (a whole number), or "-" for every frame still held',
      type: 'value_error',
    });
  }
  return Number(value);
}
