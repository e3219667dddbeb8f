import type { ServerContext } from '../../context.ts';
import type { Operation } from '../operations.ts';
import { stateHistoryOperations } from './state-history.ts';
import { stateReadOperations } from './state-read.ts';
import { stateUpdateOperations } from './state-update.ts';

/**
 * A thread's state, as the checkpointer keeps it: the current state and the
 * state at a checkpoint (state-read.ts), updates made by hand and metadata
 * added to the latest checkpoint (state-update.ts), and the history, one
 * state per checkpoint, newest first: what the JS client's React
 * `useStream` loads (state-history.ts). Reads need `threads:read`, updates
 * `threads:update`. The order below is the order of the /docs paths.
 */
export function threadStateOperations(ctx: ServerContext): Operation[] {
  return [...stateReadOperations(ctx), ...stateUpdateOperations(ctx), ...stateHistoryOperations(ctx)];
}
