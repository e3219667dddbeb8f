import { randomUUID } from 'node:crypto';
import { isSupportedChannel } from '@langchain/langgraph/stream';
import type { Event as ProtocolEvent, Namespace, SubscribeResult } from '@langchain/protocol';
import type { RawData, WebSocket } from 'ws';
import { DEFAULT_MAX_JSON_DEPTH, jsonNestingExceeds } from '../../shared/json-depth.ts';
import type { ProtocolCall } from './call.ts';
import { parseCommand, runCommand, type CommandEnvelope } from './commands.ts';
import { failure, success, type Answer } from './envelopes.ts';
import { applyVerdict, judgeEarlyReader, leaveThread, settleEarlyReader, waitForThread } from './early-readers.ts';
import { matching, type EventMatch } from './thread-events.ts';

/** Unsent bytes a socket may hold before it is closed as too slow (1013: the client reconnects and replays). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Ping interval; a socket that did not answer the previous ping is ended. */
const PING_MS = 30_000;

/**
 * One protocol WebSocket: commands in (the same as `POST /commands`, plus `subscription.subscribe` /
 * `unsubscribe`), their answers and the subscribed events out, in order. A subscription is answered first, then the
 * held events of the thread's current run it matches are replayed, then live ones follow; an event several
 * subscriptions match is sent once (the SDK fans it out). Subscriptions last across runs, until unsubscribed or the
 * socket closes.
 */
export class SocketSession {
  private readonly subscriptions = new Map<string, EventMatch>();
  private readonly live = (event: ProtocolEvent) => this.send(event);
  private alive = true;
  private readonly pinger: NodeJS.Timeout;

  constructor(
    private readonly ws: WebSocket,
    private readonly call: ProtocolCall,
  ) {
    ws.on('message', (data: RawData, isBinary: boolean) => void this.receive(data, isBinary));
    ws.on('pong', () => (this.alive = true));
    ws.on('close', () => this.closed());
    ws.on('error', () => ws.terminate());
    this.pinger = setInterval(() => {
      if (!this.alive) return ws.terminate();
      this.alive = false;
      ws.ping();
    }, PING_MS).unref();
    // Every socket begins as a waiting reader (a socket may open on a thread its run.start makes): admitted at once if
    // the thread exists (the handshake checked it is the caller's), else once a run made it (early-readers.ts).
    waitForThread(
      call.thread,
      call.auth,
      this.live,
      (event) => [...this.subscriptions.values()].some((m) => m(event)),
      (reason) =>
        this.close(4404, reason === 'deleted' ? 'thread deleted' : `Thread ${call.thread.threadId} not found`),
    );
    void settleEarlyReader(call.ctx, call.thread, this.live).catch(() => ws.terminate());
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  private closed(): void {
    clearInterval(this.pinger);
    this.subscriptions.clear();
    leaveThread(this.call.thread, this.live);
  }

  private send(message: Answer | ProtocolEvent): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    if (this.ws.bufferedAmount > MAX_BUFFERED_BYTES) return this.ws.close(1013, 'client too slow');
    this.ws.send(JSON.stringify(message));
  }

  private async receive(data: RawData, isBinary: boolean): Promise<void> {
    let raw: unknown;
    try {
      if (isBinary) throw new Error('binary');
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8');
      // As a request body (json-body.ts): too deep a value would overflow the stack of whatever walks it later.
      if (jsonNestingExceeds(text, DEFAULT_MAX_JSON_DEPTH))
        return this.send(failure(null, 'invalid_argument', `A command nests at most ${DEFAULT_MAX_JSON_DEPTH} deep.`));
      raw = JSON.parse(text);
    } catch {
      return this.send(failure(null, 'invalid_argument', 'A command is one JSON text message.'));
    }
    const command = parseCommand(raw);
    if ('type' in command) return this.send(command);
    if (command.method === 'subscription.subscribe') return this.subscribe(command);
    if (command.method === 'subscription.unsubscribe') return this.send(this.unsubscribe(command));
    this.send(await runCommand(this.call, command));
  }

  private async subscribe(command: CommandEnvelope): Promise<void> {
    const p = (command.params ?? {}) as { channels?: unknown; namespaces?: unknown; depth?: unknown };
    const channels = Array.isArray(p.channels) ? p.channels : [];
    if (channels.length === 0 || !channels.every((c) => typeof c === 'string' && isSupportedChannel(c)))
      return this.send(
        failure(command.id, 'invalid_argument', 'subscription.subscribe needs channels, each a protocol channel.'),
      );
    const namespaces =
      Array.isArray(p.namespaces) &&
      p.namespaces.every((n) => Array.isArray(n) && n.every((s) => typeof s === 'string'))
        ? (p.namespaces as Namespace[])
        : undefined;
    const depth = typeof p.depth === 'number' && Number.isInteger(p.depth) && p.depth >= 0 ? p.depth : undefined;
    // A thread that exists must be the caller's; one nobody made yet is followed until its run makes it.
    const verdict = await judgeEarlyReader(this.call.ctx, this.call.thread, this.live);
    if (verdict?.readable === false) applyVerdict(this.call.thread, this.live, verdict); // closes the socket (4404)
    if (this.call.thread.events.readerState(this.live) === 'gone') return; // refused or closed meanwhile
    const match = matching({ channels: new Set(channels as string[]), namespaces, depth });
    const id = randomUUID();
    // Synchronous from here: nothing can come between the answer, the replay and the live events.
    const events = this.call.thread.events;
    const replay =
      events.readerState(this.live) === 'reading' || verdict?.readable === true ? events.replay(match) : [];
    const result: SubscribeResult = { subscription_id: id, replayed_events: replay.length };
    this.send(success(command.id, result));
    if (events.readerState(this.live) === 'reading') for (const event of replay) this.send(event);
    this.subscriptions.set(id, match);
    // Admitted now: the held events of every subscription (none was sent any before) come, then the live ones.
    applyVerdict(this.call.thread, this.live, verdict);
    events.touch();
  }

  private unsubscribe(command: CommandEnvelope): Answer {
    const id = (command.params as { subscription_id?: unknown } | undefined)?.subscription_id;
    if (typeof id !== 'string' || !this.subscriptions.delete(id))
      return failure(command.id, 'no_such_subscription', `No subscription ${String(id)} on this socket.`);
    return success(command.id, {});
  }
}
