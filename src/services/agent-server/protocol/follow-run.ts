import type { AgentStatus, Namespace } from '@langchain/protocol';
import type { RunHandle } from '../runs/run-handle.ts';
import { protocolFrameParts } from '../runs/protocol-frames.ts';
import type { AgentStore } from '../store/agent-store.ts';
import type { ProtocolThread } from './threads.ts';

/**
 * Turns a protocol run's frames (runs/protocol-frames.ts) into the thread's protocol events, as the official server's
 * session does: the root's lifecycle is the server's own (`running` now; `completed`, `interrupted` or `failed` from
 * the run's outcome and its thread's pending interrupts), the graph's root lifecycle events are left out; the
 * interrupts a step raises (`__interrupt__` in `values` or `updates`) become `input.requested` events, once each, and
 * leave the values; a subgraph's lifecycle updates the agent tree; named custom channels come as `custom` with a name.
 */
export async function followRun(
  thread: ProtocolThread,
  handle: RunHandle,
  graphName: string,
  store: Pick<AgentStore, 'getThread'>,
): Promise<void> {
  thread.following += 1;
  try {
    await follow(thread, handle, graphName, store);
  } finally {
    thread.following -= 1;
  }
}

async function follow(
  thread: ProtocolThread,
  handle: RunHandle,
  graphName: string,
  store: Pick<AgentStore, 'getThread'>,
): Promise<void> {
  const { events, tree } = thread;
  tree.reset(graphName);
  tree.set([], 'running', graphName);
  events.append('lifecycle', [], { event: 'running', graph_name: graphName });
  const asked = new Set<string>();
  let failure: string | undefined;
  try {
    for await (const f of handle.frames) {
      if (f.event === 'metadata') continue;
      if (f.event === 'error') {
        failure = (JSON.parse(f.data) as { message?: string }).message ?? 'The run failed.';
        continue;
      }
      const { method, namespace, data } = protocolFrameParts(f);
      emit(thread, asked, method, namespace, data);
    }
  } finally {
    handle.detach();
  }
  const outcome = await handle.done;
  let status: AgentStatus =
    outcome.status === 'error' ? 'failed' : outcome.status === 'interrupted' ? 'interrupted' : 'completed';
  if (status === 'completed' && (asked.size > 0 || (await store.getThread(thread.threadId))?.status === 'interrupted'))
    status = 'interrupted';
  tree.set([], status, graphName);
  events.append('lifecycle', [], {
    event: status,
    graph_name: graphName,
    ...(status === 'failed' ? { error: outcome.error?.message ?? failure ?? 'The run failed.' } : {}),
  });
}

function emit(thread: ProtocolThread, asked: Set<string>, method: string, namespace: Namespace, data: unknown): void {
  const { events, tree } = thread;
  const record = data as Record<string, unknown> | null;
  switch (method) {
    case 'lifecycle': {
      if (namespace.length === 0) return; // the root's is the server's own (above)
      const { event, graph_name } = (record ?? {}) as { event?: AgentStatus; graph_name?: string };
      if (event !== undefined) tree.set(namespace, event, graph_name);
      events.append(method, namespace, data);
      return;
    }
    case 'values': {
      if (record !== null && typeof record === 'object' && '__interrupt__' in record) {
        const { __interrupt__: raised, ...values } = record;
        requestInput(thread, asked, namespace, raised);
        if (Object.keys(values).length > 0) events.append(method, namespace, values);
        return;
      }
      events.append(method, namespace, data);
      return;
    }
    case 'updates': {
      const { node, values } = (record ?? {}) as { node?: string; values?: unknown };
      if (node === '__interrupt__') return requestInput(thread, asked, namespace, values);
      events.append(method, namespace, values ?? {}, node);
      return;
    }
    case 'messages':
    case 'tools':
    case 'custom':
    case 'tasks':
    case 'checkpoints':
      events.append(method, namespace, data);
      return;
    default:
      // A graph's own stream channel (`custom:<name>` from a stream transformer): a named custom event.
      events.append('custom', namespace, { name: method.replace(/^custom:/, ''), payload: data });
  }
}

/** `input.requested` for each interrupt not asked before in this run. */
function requestInput(thread: ProtocolThread, asked: Set<string>, namespace: Namespace, raised: unknown): void {
  for (const entry of Array.isArray(raised) ? raised : []) {
    const { id, value } = (entry ?? {}) as { id?: unknown; value?: unknown };
    if (typeof id !== 'string' || asked.has(id)) continue;
    asked.add(id);
    thread.events.append('input.requested', namespace, { interrupt_id: id, payload: value });
  }
}
