import { z } from 'zod';
import { errorSchema } from '../common-schemas.ts';
import type { StateSnapshotLike } from '../../graphs.ts';
import { toPlain } from '../../serialize.ts';
import { threadStateSchema } from './state-schemas.ts';

/** What the thread state endpoints answer: their documented errors, and a LangGraph state as JSON. */
export const stateErrors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown thread or checkpoint (or not visible to the caller).', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};
export const stateAnswer = { 200: { description: 'The state.', schema: threadStateSchema }, ...stateErrors };
export const statesAnswer = {
  200: { description: 'States, newest first.', schema: z.array(threadStateSchema) },
  ...stateErrors,
};

type CheckpointRef = {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: unknown;
} | null;

export function checkpointOf(config: StateSnapshotLike['config']): CheckpointRef {
  const c = config?.configurable;
  if (typeof c?.thread_id !== 'string' || typeof c.checkpoint_id !== 'string') return null;
  return {
    thread_id: c.thread_id,
    checkpoint_ns: typeof c.checkpoint_ns === 'string' ? c.checkpoint_ns : '',
    checkpoint_id: c.checkpoint_id,
    checkpoint_map:
      typeof c.checkpoint_map === 'object' && c.checkpoint_map !== null ? toPlain(c.checkpoint_map) : null,
  };
}

const isSnapshot = (v: unknown): v is StateSnapshotLike =>
  typeof v === 'object' && v !== null && 'values' in v && 'next' in v;

/**
 * A state as the official server answers it. A subgraph task names its checkpoint (`{thread_id, checkpoint_ns}`: read
 * or update the subgraph through it) or, read with `subgraphs`, carries the subgraph's whole state.
 */
export function stateJson(s: StateSnapshotLike): Record<string, unknown> {
  return {
    values: toPlain(s.values ?? {}),
    next: [...s.next],
    tasks: s.tasks.map((t) => {
      const config = t.state as { configurable?: Record<string, unknown> } | null | undefined;
      return {
        id: t.id,
        name: t.name,
        error: t.error == null ? null : errorText(t.error),
        interrupts: toPlain(t.interrupts ?? []),
        path: t.path === undefined ? null : toPlain(t.path),
        checkpoint:
          config != null && typeof config.configurable === 'object'
            ? toPlain(publicCheckpoint(config.configurable))
            : null,
        state: isSnapshot(t.state) ? stateJson(t.state) : null,
        result: t.result === undefined ? null : toPlain(t.result),
      };
    }),
    checkpoint: checkpointOf(s.config),
    parent_checkpoint: checkpointOf(s.parentConfig),
    metadata: s.metadata === undefined ? null : toPlain(s.metadata),
    created_at: s.createdAt ?? null,
  };
}

export function emptyState() {
  return {
    values: {},
    next: [],
    tasks: [],
    checkpoint: null,
    parent_checkpoint: null,
    metadata: null,
    created_at: null,
  };
}

/** A task's error as text: its message (an Error), or the value itself. */
function errorText(error: unknown): string {
  if (typeof error === 'object' && error !== null && typeof (error as Error).message === 'string')
    return (error as Error).message;
  return typeof error === 'string' ? error : JSON.stringify(toPlain(error));
}

/** The checkpoint keys of a subgraph task's configurable (never LangGraph's internals or the user). */
function publicCheckpoint(configurable: Record<string, unknown>): Record<string, unknown> {
  const keep = ['thread_id', 'checkpoint_ns', 'checkpoint_id', 'checkpoint_map'];
  return Object.fromEntries(Object.entries(configurable).filter(([k]) => keep.includes(k)));
}
