import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { ServerContext } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { STREAM_MODES } from '../../runs/stream-modes.ts';
import type { Run } from '../../store/records.ts';
import { findAssistant } from '../assistants/lookup.ts';
import { errorSchema } from '../common-schemas.ts';
import { operation, param, type Operation } from '../operations.ts';
import { runBatch, runCreate, runSchema, type RunCreate } from './schemas.ts';
import { sseResponse } from '../sse.ts';
import { waitResponse } from '../wait-response.ts';
import { startRun } from './start-run.ts';

/**
 * Runs: streamed (server-sent events), waited for, or started in the
 * background, on a thread or threadless. The stream's first event is
 * `metadata` with the run id; the response's Content-Location names the
 * run, and its Location the run's join stream, where the public client
 * resumes after a broken connection (`Last-Event-ID`, see run-control-routes.ts). When the client goes away the run
 * is left to finish (`on_disconnect: continue`, the default) or cancelled (`cancel`). A waited run answers its
 * headers at once (wait-response.ts), the run's values when it ends. The authenticated
 * user reaches the graph at `config.configurable.service_auth_user` (and
 * the public name `langgraph_auth_user`); it is never stored with the run.
 *
 * A background run (`POST /threads/{thread_id}/runs`, `POST /runs`) answers
 * its record at once and goes on without a client. It streams every mode
 * unless it names some (the public server's default), and a join of it
 * without `Last-Event-ID` replays it from its first event, so a client that
 * creates a run and then joins it misses nothing.
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown assistant or thread.', schema: errorSchema },
  409: { description: 'The thread is busy and the multitask strategy is reject.', schema: errorSchema },
  422: { description: 'Invalid request (e.g. an unsupported stream_mode).', schema: errorSchema },
};
const streamAnswer = {
  description: `Server-sent events: \`metadata\` first, then one event per chunk of each requested mode (${STREAM_MODES.join(', ')}; \`messages\` gives messages/metadata, messages/partial, messages/complete), \`error\` on failure.`,
  contentType: 'text/event-stream',
  headers: {
    'Content-Location': 'The run: /runs/<run_id> or /threads/<thread_id>/runs/<run_id>.',
    Location:
      "The run's join stream (/runs/<run_id>/stream or /threads/<thread_id>/runs/<run_id>/stream), where the stream resumes (Last-Event-ID).",
  },
};
const createAnswer = {
  description:
    'The run, pending: it goes on in the background. Follow it at its join stream (`Content-Location` + `/stream`), wait for it with `/join`.',
  schema: runSchema,
  headers: { 'Content-Location': 'The run: /runs/<run_id> or /threads/<thread_id>/runs/<run_id>.' },
};
const waitAnswer = {
  description: 'The final state values of the run (on failure, `{"__error__": {"error", "message"}}`).',
  schema: z.record(z.string(), z.unknown()),
};

export function runOperations(ctx: ServerContext): Operation[] {
  /** Starts the run of the request: on the path's thread when `threaded`, else threadless. */
  const start = (c: Context<AgentEnv>, body: RunCreate, threaded: boolean, background = false) =>
    startRun(c.get('auth'), ctx, body, threaded ? param(c, 'thread_id') : null, background, c.req.raw.headers);
  const stream =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, onDisconnect } = await start(c, body, threaded);
      return sseResponse(handle.frames, {
        headers: { 'Content-Location': location, Location: `${location}/stream` },
        heartbeatMs: ctx.heartbeatMs,
        signal: c.req.raw.signal,
        onCancel: () => (onDisconnect === 'continue' ? handle.detach() : handle.cancel('disconnect')),
      });
    };
  const wait =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, onDisconnect } = await start(c, body, threaded);
      handle.detach();
      const signal = c.req.raw.signal;
      const gone = () => (onDisconnect === 'continue' ? undefined : handle.cancel('disconnect'));
      signal.addEventListener('abort', gone, { once: true });
      const answer = handle.done
        .finally(() => signal.removeEventListener('abort', gone))
        .then((outcome) => (outcome.error ? { __error__: outcome.error } : (outcome.values ?? {})));
      return waitResponse(answer, { headers: { 'Content-Location': location }, keepAliveMs: ctx.heartbeatMs });
    };
  const create =
    (threaded: boolean) =>
    async (c: Context<AgentEnv>, { body }: { body: RunCreate }) => {
      const { handle, location, run } = await start(c, body, threaded, true);
      handle.detach();
      c.header('Content-Location', location);
      return c.json(run);
    };
  /** Threadless background runs, all checked before any starts (an unknown assistant fails the whole batch). */
  const batch = async (c: Context<AgentEnv>, { body }: { body: RunCreate[] }) => {
    for (const one of body)
      if ((await findAssistant(ctx.store, ctx.graphs, one.assistant_id)) === null)
        throw notFound('Assistant', one.assistant_id);
    const runs: Run[] = [];
    for (const one of body) {
      const { handle, run } = await startRun(c.get('auth'), ctx, one, null, true, c.req.raw.headers);
      handle.detach();
      runs.push(run);
    }
    return c.json(runs);
  };
  const common = { tag: 'Runs', body: runCreate } as const;
  return [
    operation({
      ...common,
      method: 'post',
      path: '/runs/stream',
      operationId: 'stream_run_threadless',
      summary: 'Stream a threadless run',
      responses: { 200: streamAnswer, ...errors },
      handler: stream(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/stream',
      operationId: 'stream_run',
      summary: 'Stream a run on a thread',
      responses: { 200: streamAnswer, ...errors },
      handler: stream(true),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs/wait',
      operationId: 'wait_run_threadless',
      summary: 'Run threadless and wait for the result',
      responses: { 200: waitAnswer, ...errors },
      handler: wait(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs/wait',
      operationId: 'wait_run',
      summary: 'Run on a thread and wait for the result',
      responses: { 200: waitAnswer, ...errors },
      handler: wait(true),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/runs',
      operationId: 'create_run_threadless',
      summary: 'Start a threadless run in the background',
      responses: { 200: createAnswer, ...errors },
      handler: create(false),
    }),
    operation({
      ...common,
      method: 'post',
      path: '/threads/{thread_id}/runs',
      operationId: 'create_run',
      summary: 'Start a run on a thread in the background',
      responses: { 200: createAnswer, ...errors },
      handler: create(true),
    }),
    operation({
      tag: 'Runs',
      method: 'post',
      path: '/runs/batch',
      operationId: 'create_runs_batch',
      summary: 'Start threadless runs in the background',
      description:
        'Each item is a run body (`runs.createBatch`); every assistant is checked before any run starts. Answers the runs, in order.',
      body: runBatch,
      responses: { 200: { description: 'The runs, pending.', schema: z.array(runSchema) }, ...errors },
      handler: batch,
    }),
  ];
}
