import type { ServerContext } from '../../context.ts';
import type { RunnableGraph } from '../../graphs.ts';
import type { Thread } from '../../store/records.ts';

/**
 * The thread's graph on the server's checkpointer; null before its first run (or when its graph is no longer served).
 */
export async function graphOf(
  { graphs }: Pick<ServerContext, 'graphs'>,
  thread: Thread,
): Promise<RunnableGraph | null> {
  const graphId = thread.metadata.graph_id;
  if (typeof graphId !== 'string' || !graphs.has(graphId)) return null;
  // A factory builds the graph from the config of the thread's last run (its nodes may depend on it).
  const kept = (thread.config as { configurable?: Record<string, unknown> }).configurable;
  return graphs.get(graphId, { configurable: { ...kept, thread_id: thread.thread_id } });
}
