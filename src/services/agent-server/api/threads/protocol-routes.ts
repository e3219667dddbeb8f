import { followProtocolRunElsewhere } from '../../protocol/follow-elsewhere.ts';
import { isSupportedChannel } from '@langchain/langgraph/stream';
import type { Event as ProtocolEvent } from '@langchain/protocol';
import { z } from 'zod';
import type { ServerContext } from '../../context.ts';
import { invalid, notFound } from '../../errors.ts';
import { parseCommand, runCommand } from '../../protocol/commands.ts';
import { handshakes } from '../../protocol/handshakes.ts';
import { readableThread } from '../../protocol/thread-access.ts';
import { attachReader, leaveThread } from '../../protocol/early-readers.ts';
import { matching } from '../../protocol/thread-events.ts';
import type { ProtocolThreads } from '../../protocol/threads.ts';
import { Channel } from '../../runs/channel.ts';
import type { Frame } from '../../runs/frames.ts';
import { errorSchema, object } from '../common-schemas.ts';
import { operation, param, type Operation } from '../operations.ts';
import { sseResponse } from '../sse.ts';

/**
 * The thread-centric protocol over HTTP (`client.threads.stream(...)` of the public SDK, transport `sse`):
 * commands at `POST /threads/{thread_id}/commands`, events at `POST /threads/{thread_id}/stream/events` (server-sent
 * events, filtered by the body, each `event: <method>`, `id: <event_id>`, `data: <the protocol event>`). The same
 * path answers a WebSocket handshake (`GET`, socket.ts); a plain GET there is told to upgrade.
 */
const command = z.object({
  id: z.number().int().min(0),
  method: z.string().min(1),
  params: object().optional(),
});
const eventFilter = z.object({
  channels: z
    .array(
      z
        .string()
        .refine(
          isSupportedChannel,
          'unknown channel (values, updates, messages, tools, lifecycle, input, checkpoints, tasks, custom, custom:<name>)',
        ),
    )
    .min(1),
  namespaces: z.array(z.array(z.string())).optional(),
  depth: z.number().int().min(0).optional(),
  since: z.number().int().min(0).optional(),
});
const threadPath = z.uuid();
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  404: { description: 'Unknown thread (or not visible to the caller).', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};

export function protocolOperations(ctx: ServerContext, threads: ProtocolThreads): Operation[] {
  const threadOf = (id: string) => {
    if (!threadPath.safeParse(id).success)
      throw invalid({ loc: ['path', 'thread_id'], msg: 'thread_id must be a UUID.', type: 'uuid_parsing' });
    return threads.get(id);
  };
  return [
    operation({
      tag: 'Threads',
      method: 'post',
      path: '/threads/{thread_id}/commands',
      operationId: 'protocol_command',
      summary: 'Send a protocol command',
      description:
        'A command of the thread-centric protocol, `{id, method, params}`: `run.start`, `input.respond`, `state.get`, `state.listCheckpoints`, `state.fork`, `agent.getTree`. Answers `{type: "success", id, result, meta}` or `{type: "error", id, error, message}` with the protocol\'s error codes.',
      body: command,
      responses: { 200: { description: 'The success or error envelope.' }, ...errors },
      async handler(c, { body }) {
        const thread = threadOf(param(c, 'thread_id'));
        const parsed = parseCommand(body);
        if ('type' in parsed) return c.json(parsed);
        // A command that started a run names it as the REST endpoints do, so the edge can hold an in-flight slot
        // (`until: run`) until that run ends.
        const onRunStarted = (runId: string) =>
          c.header('Content-Location', `/threads/${thread.threadId}/runs/${runId}`);
        const call = { ctx, threads, auth: c.get('auth'), headers: c.req.raw.headers, thread, onRunStarted };
        return c.json(await runCommand(call, parsed));
      },
    }),
    operation({
      tag: 'Threads',
      method: 'post',
      path: '/threads/{thread_id}/stream/events',
      operationId: 'protocol_events',
      summary: "Follow a thread's protocol events",
      description:
        "Server-sent events of the thread: the events of its current run held so far (after `since`, a `seq`), then what comes, on the `channels` asked, under `namespaces` (at most `depth` below). The stream stays open between runs until the client leaves. A thread that does not exist yet can be followed: the events of the run that makes it come (and the stream ends with nothing sent if that thread is not the caller's).",
      body: eventFilter,
      responses: { 200: { description: 'Server-sent events.', contentType: 'text/event-stream' }, ...errors },
      async handler(c, { body }) {
        const id = param(c, 'thread_id');
        const thread = threadOf(id);
        // A run of the thread going on on another server is followed here first, for a reader that may read it.
        if ((await ctx.store.getThread(id)) !== null && (await readableThread(c.get('auth'), ctx, id)) !== null)
          await followProtocolRunElsewhere(ctx, thread);
        const frames = new Channel<Frame>();
        const sink = (e: ProtocolEvent) => frames.push({ event: e.method, data: JSON.stringify(e), id: e.event_id });
        const match = matching({ channels: new Set(body.channels), namespaces: body.namespaces, depth: body.depth });
        // A thread nobody made yet is followed as the official server does: its next run's events come once that
        // run made it (and it is the caller's: early-readers.ts).
        const attached = await attachReader(ctx, thread, c.get('auth'), {
          sink,
          match,
          onEnd: () => frames.close(),
          replay: () => {
            for (const e of thread.events.replay(match, body.since)) sink(e);
          },
        });
        if (attached === 'refused') throw notFound('Thread', id);
        return sseResponse(frames, {
          headers: {},
          open: true,
          heartbeatMs: ctx.heartbeatMs,
          signal: c.req.raw.signal,
          onCancel: () => {
            leaveThread(thread, sink);
            frames.detach();
          },
        });
      },
    }),
    operation({
      tag: 'Threads',
      method: 'get',
      path: '/threads/{thread_id}/stream/events',
      operationId: 'protocol_socket',
      summary: "Open the protocol's WebSocket",
      description:
        'The thread-centric protocol over one WebSocket: commands in, their answers and the events of `subscription.subscribe` out. Credentials as for any request, or, from a browser, in the subprotocol (`["bearer", <token>]`, `["x-api-key", <key>]`) or a cookie. A refusal closes the socket with 4000 + the HTTP status (4401, 4403, 4404, 4422).',
      responses: { 426: { description: 'Not a WebSocket handshake.', schema: errorSchema }, ...errors },
      async handler(c) {
        const pending = handshakes.get(c.req.raw);
        if (pending === undefined)
          return c.json(
            { detail: 'Upgrade Required: this path serves a WebSocket (or POST for server-sent events).' },
            426,
          );
        const id = param(c, 'thread_id');
        threadOf(id);
        // A thread not made yet is fine: the socket's run.start makes it. One that exists must be the caller's.
        if ((await ctx.store.getThread(id)) !== null && (await readableThread(c.get('auth'), ctx, id)) === null)
          throw notFound('Thread', id);
        await followProtocolRunElsewhere(ctx, threadOf(id));
        pending.auth = c.get('auth');
        return c.body(null, 200);
      },
    }),
  ];
}
