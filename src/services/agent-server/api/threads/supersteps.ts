import { Command } from '@langchain/langgraph';
import { z } from 'zod';
import type { ServerContext } from '../../context.ts';
import { invalid } from '../../errors.ts';
import { interruptsOf, type StateSnapshotLike } from '../../graphs.ts';
import { toPlain } from '../../serialize.ts';
import type { Json, Thread } from '../../store/records.ts';
import { removeThread } from './removal.ts';

/**
 * `threads.create({supersteps})`: a new thread whose state is built by applying updates, superstep after superstep,
 * as if the named nodes had written them (how a thread is copied between deployments). The graph is the thread's
 * `metadata.graph_id` (the JS client's `graphId`). A superstep that LangGraph refuses (an unknown node, say) answers
 * 422 and leaves no thread behind.
 */
export const supersteps = z
  .array(
    z.object({
      updates: z
        .array(
          z.object({
            values: z.unknown().optional(),
            command: z
              .object({ resume: z.unknown().optional(), update: z.unknown().optional(), goto: z.unknown().optional() })
              .nullish(),
            as_node: z.string().min(1),
          }),
        )
        .min(1),
    }),
  )
  .max(1000);
export type Supersteps = z.output<typeof supersteps>;

/** 422 unless the thread to be created names a graph of the app. */
export function requireSuperstepGraph(ctx: ServerContext, metadata: Json | null | undefined): string {
  const graphId = metadata?.graph_id;
  if (typeof graphId !== 'string' || !ctx.graphs.has(graphId))
    throw invalid({
      loc: ['body', 'metadata', 'graph_id'],
      msg: `supersteps need the thread's graph: metadata.graph_id (the JS client's graphId), one of ${ctx.graphs.names.join(', ')}`,
      type: 'value_error',
    });
  return graphId;
}

/** Applies `steps` to the new thread; answers the thread with its values. */
export async function applySupersteps(
  ctx: ServerContext,
  thread: Thread,
  graphId: string,
  steps: Supersteps,
): Promise<Thread> {
  const configurable = { thread_id: thread.thread_id };
  const graph = (await ctx.graphs.get(graphId, { configurable })) as unknown as {
    bulkUpdateState(config: unknown, steps: unknown): Promise<unknown>;
    getState(config: unknown): Promise<StateSnapshotLike>;
  };
  try {
    await graph.bulkUpdateState(
      { configurable },
      steps.map((s) => ({
        updates: s.updates.map((u) => ({
          values: u.command ? new Command(u.command as ConstructorParameters<typeof Command>[0]) : u.values,
          asNode: u.as_node,
        })),
      })),
    );
  } catch (err) {
    await removeThread(ctx, thread.thread_id);
    throw invalid({ loc: ['body', 'supersteps'], msg: (err as Error).message, type: 'value_error' });
  }
  const state = await graph.getState({ configurable });
  const interrupts = interruptsOf(state);
  const updated: Thread = {
    ...thread,
    values: toPlain<Json | null>(state.values ?? null),
    interrupts,
    status: Object.keys(interrupts).length > 0 ? 'interrupted' : 'idle',
    updated_at: new Date().toISOString(),
    state_updated_at: new Date().toISOString(),
  };
  await ctx.store.putThread(updated);
  return updated;
}
