import type { ResponseMeta, ResultData } from '@langchain/protocol';
import type { ProtocolCall } from './call.ts';
import { CommandError, errorAnswer, failure, success, type Answer } from './envelopes.ts';
import { inputRespond, runStart, stateFork } from './run-commands.ts';
import { agentTree, listCheckpoints, stateGet } from './state-commands.ts';

/** A command as it comes: `{id, method, params}`, checked by parseCommand. */
export interface CommandEnvelope {
  readonly id: number;
  readonly method: string;
  readonly params?: unknown;
}

/** The command in `raw`, or the error envelope (with `id: null`) that says what is wrong with it. */
export function parseCommand(raw: unknown): CommandEnvelope | Answer {
  const c = raw as Partial<CommandEnvelope> | null;
  if (typeof c !== 'object' || c === null || Array.isArray(c))
    return failure(null, 'invalid_argument', 'A command is a JSON object: {"id", "method", "params"}.');
  if (typeof c.id !== 'number' || !Number.isInteger(c.id) || c.id < 0)
    return failure(null, 'invalid_argument', 'A command needs an integer id (0 or more).');
  if (typeof c.method !== 'string' || c.method === '')
    return failure(c.id, 'invalid_argument', 'A command needs a method (a string).');
  return { id: c.id, method: c.method, params: c.params };
}

const handlers: Readonly<Record<string, (call: ProtocolCall, params: unknown) => Promise<ResultData>>> = {
  'run.start': runStart,
  'input.respond': inputRespond,
  'state.get': stateGet,
  'state.listCheckpoints': listCheckpoints,
  'state.fork': stateFork,
  'agent.getTree': agentTree,
};

/** Methods the protocol defines that this server does not serve, and why (the answer's message). */
const NOT_SERVED: Readonly<Record<string, string>> = {
  'input.inject': 'input.inject is not served: start a run with the message as its input.',
  'subscription.reconnect':
    'subscription.reconnect is not served: subscribe again; the events of the current run are replayed.',
};

/**
 * Runs a command of the thread (not the subscription commands, which belong to a WebSocket: socket.ts) and answers
 * its success or error envelope, with `meta` the thread and the seq of the last event its result reflects.
 */
export async function runCommand(call: ProtocolCall, command: CommandEnvelope): Promise<Answer> {
  const handler = handlers[command.method];
  try {
    if (handler === undefined) {
      const reason = NOT_SERVED[command.method];
      if (reason !== undefined) throw new CommandError('not_supported', reason);
      if (command.method.startsWith('subscription.'))
        throw new CommandError(
          'not_supported',
          `${command.method} is a WebSocket command: over HTTP, open POST /threads/{thread_id}/stream/events with a filter.`,
        );
      throw new CommandError('unknown_command', `Unknown command: ${command.method}.`);
    }
    const result = await handler(call, command.params);
    const meta: ResponseMeta = { thread_id: call.thread.threadId, applied_through_seq: call.thread.events.lastSeq };
    return success(command.id, result, meta);
  } catch (err) {
    if (!(err instanceof CommandError))
      call.ctx.log.debug(
        { method: command.method, err: { message: (err as Error)?.message } },
        'protocol command failed',
      );
    return errorAnswer(command.id, err);
  }
}
