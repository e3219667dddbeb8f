import type { InputRespondParams, RunStartParams, StateForkParams } from '@langchain/protocol';
import { runCreate, type RunCreate } from '../api/runs/schemas.ts';
import { startRun } from '../api/runs/start-run.ts';
import { findAssistant } from '../api/assistants/lookup.ts';
import type { ProtocolCall } from './call.ts';
import { CommandError } from './envelopes.ts';
import { settleEarlyReaders } from './early-readers.ts';
import { followRun } from './follow-run.ts';
import { readableThread } from './thread-access.ts';

type Params = Record<string, unknown>;
const isRecord = (v: unknown): v is Params => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `run.start`: an ordinary run on the thread (made if it does not exist yet), as `POST /threads/{id}/runs` would
 * start it, behind the same authorization (`threads` `create_run`), visible to `runs.list`, joinable and
 * cancellable; it streams protocol events (runs/protocol-frames.ts). The multitask strategy defaults to `enqueue`
 * (the official protocol server's). On a thread waiting at an interrupt, the input resumes it, as the official server
 * does.
 */
export async function runStart(call: ProtocolCall, raw: unknown): Promise<{ run_id: string }> {
  const params = (isRecord(raw) ? raw : {}) as Partial<RunStartParams> & Params;
  if (typeof params.assistant_id !== 'string' || params.assistant_id === '')
    throw new CommandError('invalid_argument', 'run.start requires an assistant_id.');
  const existing = await call.ctx.store.getThread(call.thread.threadId);
  const waiting = existing !== null && Object.keys(existing.interrupts).length > 0 && params.input != null;
  return start(call, {
    assistant_id: params.assistant_id,
    ...(waiting ? { command: { resume: params.input } } : { input: params.input ?? null }),
    config: params.config,
    metadata: params.metadata,
    multitask_strategy: params.multitask_strategy ?? 'enqueue',
  });
}

/**
 * `input.respond`: resumes the interrupts named (one, or a batch at the same checkpoint) in one run, with the
 * optional `update` and `goto` in the same step (LangGraph's `Command(resume, update, goto)`). Each interrupt must be
 * pending on the thread (`no_such_interrupt` otherwise).
 */
export async function inputRespond(call: ProtocolCall, raw: unknown): Promise<Record<string, never>> {
  const params = (isRecord(raw) ? raw : {}) as Partial<InputRespondParams> & Params;
  const resume: Params = {};
  if (Array.isArray(params.responses)) {
    for (const entry of params.responses as unknown[]) {
      if (!isRecord(entry) || typeof entry.interrupt_id !== 'string')
        throw new CommandError('invalid_argument', 'input.respond: each of responses needs an interrupt_id.');
      resume[entry.interrupt_id] = entry.response;
    }
  } else if (typeof params.interrupt_id === 'string') resume[params.interrupt_id] = params.response;
  if (Object.keys(resume).length === 0)
    throw new CommandError('invalid_argument', 'input.respond requires an interrupt_id (or responses).');
  const thread = await readableThread(call.auth, call.ctx, call.thread.threadId);
  if (thread === null) throw new CommandError('no_such_run', `Thread ${call.thread.threadId} has no interrupted run.`);
  const pending = new Set(
    Object.values(thread.interrupts)
      .flat()
      .map((i) => (i as { id?: unknown }).id),
  );
  const unknown = Object.keys(resume).find((id) => !pending.has(id));
  if (unknown !== undefined)
    throw new CommandError('no_such_interrupt', `No pending interrupt ${unknown} on this thread.`);
  const assistantId = call.thread.assistantId ?? thread.metadata.assistant_id;
  if (typeof assistantId !== 'string') throw new CommandError('no_such_run', 'The thread has no run to resume.');
  await start(call, {
    assistant_id: assistantId,
    command: {
      resume,
      ...(isRecord(params.update) || Array.isArray(params.update) ? { update: params.update } : {}),
      ...(params.goto !== undefined ? { goto: params.goto } : {}),
    },
    config: params.config,
    metadata: params.metadata,
    multitask_strategy: 'enqueue',
  });
  call.thread.events.append('input.answered', [], { interrupt_ids: Object.keys(resume) });
  return {};
}

/** `state.fork`: a run from an earlier checkpoint of the thread (`config.configurable.checkpoint_id`). */
export async function stateFork(call: ProtocolCall, raw: unknown): Promise<{ run_id: string; thread_id: string }> {
  const params = (isRecord(raw) ? raw : {}) as Partial<StateForkParams> & Params;
  if (typeof params.checkpoint_id !== 'string' || params.checkpoint_id === '')
    throw new CommandError('invalid_argument', 'state.fork requires a checkpoint_id.');
  const assistantId =
    call.thread.assistantId ?? (await call.ctx.store.getThread(call.thread.threadId))?.metadata.assistant_id;
  if (typeof assistantId !== 'string')
    throw new CommandError('no_such_checkpoint', 'The thread has no checkpoint to fork.');
  const { run_id } = await start(call, {
    assistant_id: assistantId,
    input: params.input ?? null,
    config: params.config,
    checkpoint_id: params.checkpoint_id,
    multitask_strategy: 'enqueue',
  });
  return { run_id, thread_id: call.thread.threadId };
}

/**
 * A protocol run begins once its thread's readers have settled (nobody came for QUIET_MS), at the latest after
 * MAX_WAIT_MS. The SDK opens its event streams only once `run.start` has answered, one after the other (a stream per
 * change of what it reads: `thread.values`, then `thread.messages`), and after a root terminal `lifecycle` it pauses
 * the subscriptions made before it: a run that ended before the second stream opened would leave `thread.messages`
 * empty. The official server's queue starts runs up to a second later (it polls); this waits only as long as needed.
 */
const QUIET_MS = 200;
const MAX_WAIT_MS = 1000;

/** Starts a protocol run from a REST run body (checked by the same schema) and follows its frames. */
async function start(call: ProtocolCall, body: Params): Promise<{ run_id: string }> {
  const parsed = runCreate.safeParse({
    ...body,
    if_not_exists: 'create',
    stream_resumable: true,
    on_disconnect: 'continue',
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CommandError('invalid_argument', `${issue.path.join('.') || 'params'}: ${issue.message}`);
  }
  const { ctx, thread } = call;
  const runBody: RunCreate = parsed.data;
  const assistant = await findAssistant(ctx.store, ctx.graphs, runBody.assistant_id);
  const gate = thread.events.settled(QUIET_MS, MAX_WAIT_MS);
  const { run, handle } = await startRun(call.auth, ctx, runBody, thread.threadId, false, call.headers, { gate });
  thread.currentRunId = run.run_id;
  call.onRunStarted?.(run.run_id);
  thread.assistantId = run.assistant_id;
  thread.events.newRun();
  void followRun(thread, handle, assistant?.graph_id ?? 'root', ctx.store).catch((err: unknown) =>
    ctx.log.error({ run_id: run.run_id, err: { message: (err as Error)?.message } }, 'protocol events of a run lost'),
  );
  // The run made the thread (or found it): readers that came before it are admitted (this run's events so far, then
  // the live ones) or refused.
  void settleEarlyReaders(ctx, thread).catch((err: unknown) =>
    ctx.log.error({ run_id: run.run_id, err: { message: (err as Error)?.message } }, 'early readers not settled'),
  );
  return { run_id: run.run_id };
}
