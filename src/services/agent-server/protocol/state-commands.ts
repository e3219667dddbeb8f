import type { AgentResult, CheckpointSummary, ListCheckpointsResult, StateGetResult } from '@langchain/protocol';
import { graphOf } from '../api/threads/thread-graph.ts';
import { toPlain } from '../serialize.ts';
import type { Thread } from '../store/records.ts';
import type { ProtocolCall } from './call.ts';
import { CommandError } from './envelopes.ts';
import { readableThread } from './thread-access.ts';

type Params = Record<string, unknown>;
const isRecord = (v: unknown): v is Params => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The thread, readable by the caller; an unknown thread and one the caller may not read answer alike. */
async function thread(call: ProtocolCall): Promise<Thread> {
  const found = await readableThread(call.auth, call.ctx, call.thread.threadId);
  if (found === null) throw new CommandError('invalid_argument', `Thread ${call.thread.threadId} not found`);
  return found;
}

/** `state.get`: the thread's values now (only `keys` when given) and the checkpoint they are at. */
export async function stateGet(call: ProtocolCall, raw: unknown): Promise<StateGetResult> {
  const params = isRecord(raw) ? raw : {};
  const t = await thread(call);
  const graph = await graphOf(call.ctx, t);
  if (graph === null) return { values: {} };
  const state = await graph.getState({ configurable: { thread_id: t.thread_id } });
  let values = toPlain<Record<string, unknown>>(state.values ?? {});
  const keys = params.keys;
  if (Array.isArray(keys)) values = Object.fromEntries(Object.entries(values).filter(([k]) => keys.includes(k)));
  const c = state.config?.configurable;
  const checkpoint =
    typeof c?.checkpoint_id === 'string'
      ? { id: c.checkpoint_id, ...(typeof c.checkpoint_ns === 'string' ? { ns: c.checkpoint_ns } : {}) }
      : undefined;
  return { values, ...(checkpoint ? { checkpoint } : {}) };
}

/** `state.listCheckpoints`: the thread's checkpoints, newest first (`limit`, default 10; `before` a checkpoint id). */
export async function listCheckpoints(call: ProtocolCall, raw: unknown): Promise<ListCheckpointsResult> {
  const params = isRecord(raw) ? raw : {};
  const t = await thread(call);
  const graph = await graphOf(call.ctx, t);
  if (graph === null) return { checkpoints: [] };
  const limit = typeof params.limit === 'number' && params.limit > 0 ? Math.min(params.limit, 1000) : 10;
  const before =
    typeof params.before === 'string'
      ? { configurable: { thread_id: t.thread_id, checkpoint_id: params.before } }
      : undefined;
  const checkpoints: CheckpointSummary[] = [];
  for await (const s of graph.getStateHistory(
    { configurable: { thread_id: t.thread_id } },
    { limit, ...(before ? { before } : {}) },
  )) {
    const id = s.config?.configurable?.checkpoint_id;
    if (typeof id !== 'string') continue;
    const metadata = toPlain<Record<string, unknown>>(s.metadata ?? {});
    const writes = isRecord(metadata.writes) ? Object.keys(metadata.writes) : [];
    checkpoints.push({
      id,
      timestamp: (s as { createdAt?: string }).createdAt ?? '',
      step: typeof metadata.step === 'number' ? metadata.step : 0,
      ...(writes.length === 1 ? { node_name: writes[0] } : {}),
      metadata,
    });
  }
  return { checkpoints };
}

/** `agent.getTree`: the root graph and the subgraphs of the thread's current run, with their status. */
export async function agentTree(call: ProtocolCall): Promise<AgentResult> {
  await thread(call);
  return { tree: call.thread.tree.tree() };
}
