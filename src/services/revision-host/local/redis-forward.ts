import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Logger } from 'pino';
import { isItemDelete } from '../../agent-server/store/item-functions.ts';
import { listenForward, type SocketForward } from './socket-forward.ts';
import { ReplyCounter, RequestFrames, type FrameSink } from './resp-frames.ts';

/**
 * A revision's only way to its Redis: a Unix socket the host owns (in a
 * folder of its own, bound into the sandbox), forwarded connection by
 * connection to the real Redis, where the forwarder authenticates with the
 * deployment's user itself. App code never holds the credentials; whatever
 * it sends through the socket runs as that user (its key prefix, its
 * commands: redis-acl-rules.ts). On the way the forwarder bounds what the
 * ACL cannot:
 * - connections: at most `maxConnections` at once (more are closed at accept), each closed after `idleMs` unused;
 * - one request: at most `maxRequestBytes` (answered with an error, the connection closed); requests stream through,
 *   so the gateway holds no more of one than a chunk;
 * - bytes: while the deployment's `budget` says it is over, every command that may grow its data (all but reads and
 *   deletes) is answered `-OOM ...` without reaching Redis, so the deployment can still read and delete;
 * - connection state: AUTH, HELLO (no RESP3: replies are counted as RESP2), RESET and SELECT are the forwarder's.
 *
 * Replies the forwarder makes itself go in order between Redis's (resp-frames.ts counts where each of Redis's ends).
 */
export interface RedisTarget {
  /** The URL with the deployment user's credentials (redis:// or rediss://, optional /db). */
  readonly url: string;
}

export interface RedisBudgetView {
  /** Whether the deployment is over its budget now. */
  over(): boolean;
  /** Bytes a forwarded command may add, counted until the next measure. */
  wrote(bytes: number): void;
  readonly maxBytes: number;
}

export interface RedisForwardOptions {
  /** Where to listen (the caller's folder: it must not exist yet). */
  readonly socketPath: string;
  readonly target: RedisTarget;
  readonly maxConnections: number;
  readonly idleMs: number;
  readonly maxRequestBytes: number;
  readonly budget: RedisBudgetView | null;
  readonly log: Logger;
}

export type RedisForward = SocketForward;

/** Commands that never grow a deployment's data: always forwarded, never counted. */
const READS = new Set([
  'get',
  'mget',
  'exists',
  'smembers',
  'hget',
  'hmget',
  'hgetall',
  'hlen',
  'zrange',
  'zrangebyscore',
  'zscore',
  'zrevrange',
  'zrevrangebylex',
  'ping',
  'echo',
  'quit',
  // the run relay's reads and messages (agent-server/relay/redis-run-relay.ts)
  'xread',
  'xrevrange',
  'hkeys',
  'pexpire',
  'publish',
  'subscribe',
  'unsubscribe',
  'multi',
  'exec',
  'discard',
]);
const DELETES = new Set(['del', 'unlink', 'srem', 'hdel', 'zrem']);
/** Connection state the forwarder set up (the user, the database, RESP2): not the client's to change. */
const OWN = new Set(['auth', 'hello', 'reset', 'select']);
/**
 * What Redis may use for a write beyond its request's bytes: the allocator rounds a value up to its size class (up
 * to a quarter more), and a key costs its entry and object.
 */
const ALLOCATOR_SLACK = 1.25;
const PER_KEY = 64;

export function startRedisForward(o: RedisForwardOptions): Promise<RedisForward> {
  const url = new URL(o.target.url);
  const auth: string[] = [];
  if (url.password !== '')
    auth.push(...(url.username !== '' ? [decodeURIComponent(url.username)] : []), decodeURIComponent(url.password));
  const db = Number(url.pathname.slice(1) || '0');
  const setup: string[][] = [
    ...(auth.length > 0 ? [['AUTH', ...auth]] : []),
    ...(db > 0 ? [['SELECT', String(db)]] : []),
  ];
  const open = (): Socket => {
    const port = Number(url.port || 6379);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return url.protocol === 'rediss:' ? tlsConnect({ host, port, servername: host }) : tcpConnect({ host, port });
  };
  return listenForward(o.socketPath, o.maxConnections, (client) => forwardOne(client, open(), setup, o));
}

type Pending =
  { kind: 'redis'; n: number } | { kind: 'drop' } | { kind: 'local'; data: Buffer } | { kind: 'subscribe' };
/** What a subscribed connection may still send (as Redis allows in RESP2). */
const WHILE_SUBSCRIBED = new Set(['subscribe', 'unsubscribe', 'ping', 'quit']);

function forwardOne(client: Socket, redis: Socket, setup: string[][], o: RedisForwardOptions): void {
  const frames = new RequestFrames(o.maxRequestBytes);
  const replies = new ReplyCounter();
  const pending: Pending[] = [];
  let inMulti = false;
  let multiRefused = false;
  /** A refused stream: the connection ends once Redis answered what came before. */
  let closing = false;
  /**
   * SUBSCRIBEd (once Redis confirmed it): Redis now sends messages nobody asked for, so what it sends passes through
   * uncounted, and the client may send only WHILE_SUBSCRIBED (none grows the deployment's data).
   */
  let subscribed = false;
  const end = () => {
    client.destroy();
    redis.destroy();
  };
  client.on('error', end).on('close', end);
  redis.on('error', end).on('close', end);
  client.setTimeout(o.idleMs, end);
  // Back-pressure both ways, as pipe() would.
  const flow = (from: Socket, to: Socket) => (ok: boolean) => {
    if (!ok && !from.isPaused()) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  };
  const toClient = flow(redis, client);
  const toRedis = flow(client, redis);

  const local = (text: string) => {
    const data = Buffer.from(`-${text}\r\n`);
    if (pending.length === 0) toClient(client.write(data));
    else pending.push({ kind: 'local', data });
  };
  const expect = (kind: 'redis' | 'drop') => {
    const last = pending[pending.length - 1];
    if (kind === 'redis' && last?.kind === 'redis') last.n++;
    else pending.push(kind === 'redis' ? { kind, n: 1 } : { kind });
  };
  const unexpect = () => {
    const last = pending[pending.length - 1];
    if (last?.kind === 'redis' && --last.n === 0) pending.pop();
  };
  const send = (args: string[], kind: 'redis' | 'drop') => {
    toRedis(redis.write(encode(args)));
    expect(kind);
  };
  for (const command of setup) send(command, 'drop');

  /** Whether the frame being forwarded may grow the deployment's data (its bytes then count against the budget). */
  let growing = false;
  const sink: FrameSink = {
    head(command, arg1) {
      if (subscribed) {
        if (WHILE_SUBSCRIBED.has(command)) return ((growing = false), true);
        return (local(`ERR ${command.toUpperCase()} on a subscribed connection`), false);
      }
      if (OWN.has(command)) return (local(`ERR ${command.toUpperCase()} is the gateway's on this connection`), false);
      if (command === 'exec' && inMulti && multiRefused) {
        inMulti = false;
        send(['DISCARD'], 'drop');
        return (local('EXECABORT Transaction discarded because of previous errors.'), false);
      }
      growing = !READS.has(command) && !DELETES.has(command) && !(command === 'fcall' && isItemDelete(arg1));
      if (growing && o.budget?.over()) {
        if (inMulti) multiRefused = true;
        return (local(`OOM deployment over its Redis budget of ${Math.round(o.budget.maxBytes / 1048576)} MiB`), false);
      }
      if (growing) o.budget?.wrote(PER_KEY);
      if (command === 'multi') [inMulti, multiRefused] = [true, false];
      else if (command === 'exec' || command === 'discard') inMulti = false;
      if (command === 'subscribe' && !inMulti) pending.push({ kind: 'subscribe' });
      else expect('redis');
      return true;
    },
    data(bytes) {
      if (growing) o.budget?.wrote(Math.ceil(bytes.length * ALLOCATOR_SLACK));
      toRedis(redis.write(bytes));
    },
  };
  client.on('data', (chunk: Buffer) => {
    // The frames of one chunk leave in one write (writev), not one syscall each.
    redis.cork();
    const error = frames.feed(chunk, sink);
    redis.uncork();
    if (error === null) return;
    // Part of a frame Redis will never see whole: no reply is owed for it (the connection ends below).
    if (frames.forwarding) unexpect();
    // What Redis still owes is delivered first, then the error, then the end.
    local(`ERR ${error}`);
    client.pause();
    closing = true;
    if (pending.length === 0) client.end();
  });

  redis.on('data', (chunk: Buffer) => {
    if (subscribed) return void toClient(client.write(chunk));
    client.cork();
    try {
      answer(chunk);
    } finally {
      client.uncork();
    }
  });
  const answer = (chunk: Buffer) => {
    let start = 0;
    const error = replies.feed(chunk, (at, type) => {
      if (subscribed) return; // the rest of the chunk passes through below
      const head = pending[0];
      if (!head || head.kind === 'local') return void end(); // a reply nobody asked for
      if (head.kind === 'subscribe') {
        pending.shift();
        if (type !== '-') return void (subscribed = true); // from this reply on, everything passes through
        toClient(client.write(chunk.subarray(start, at))); // refused (a channel not its own): not subscribed
        start = at;
        return;
      }
      if (head.kind === 'drop') {
        if (type === '-') {
          o.log.error(
            { reply: chunk.toString('latin1', start, Math.min(at, start + 200)).trim() },
            'redis refused the forwarder\u2019s setup',
          );
          return void end();
        }
        pending.shift();
      } else {
        toClient(client.write(chunk.subarray(start, at)));
        if (--head.n === 0) pending.shift();
      }
      start = at;
      while (pending[0]?.kind === 'local') toClient(client.write((pending.shift() as { data: Buffer }).data));
      if (closing && pending.length === 0) client.end();
    });
    if (subscribed) return void toClient(client.write(chunk.subarray(start)));
    if (error !== null) {
      o.log.warn({ err: error }, 'redis forwarder: unreadable reply');
      return end();
    }
    if (start < chunk.length && pending[0]?.kind === 'redis') toClient(client.write(chunk.subarray(start)));
  };
}

function encode(args: string[]): Buffer {
  return Buffer.from(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
}
