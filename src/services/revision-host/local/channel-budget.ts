import type { Readable } from 'node:stream';
import type { Logger } from 'pino';

/**
 * A budget for what a revision's process writes on its control channel (fd 3) besides the protocol. App code shares
 * that process and can write there: a line per ignored message in the gateway's log let one tenant add 115 MiB of log
 * and 3.4 CPU-s of the edge's event loop in 2.8 s, stalling every other tenant's requests. So:
 *
 * - ignored messages are counted and logged at most once per `reportMs`, with how many and the last reason;
 * - more than `maxIgnored` of them within `windowMs` is a process that floods its channel on purpose (a revision of
 *   this gateway never sends one): `onFlood` is called once, and the caller closes the process with FLOOD_REASON;
 * - the channel is read at most `bytesPerSecond` a second (the stream pauses until the next second), so what the
 *   gateway spends on parsing before the budget runs out is bounded too. The protocol's own traffic (one `ready`,
 *   key checks of at most 4 KiB each, cached) is far below it.
 */
export const FLOOD_REASON = 'the process flooded its control channel';

export interface ChannelBudgetOptions {
  readonly log: Logger;
  /** Called once, when the process has sent more than `maxIgnored` ignored messages within `windowMs`. */
  readonly onFlood: (reason: string) => void;
  readonly maxIgnored?: number;
  readonly windowMs?: number;
  readonly reportMs?: number;
  readonly bytesPerSecond?: number;
  readonly now?: () => number;
}

export interface ChannelBudget {
  /** One message was ignored (`what`: its shape, never its content; `why`: the reason). */
  ignored(what: string, why: string): void;
  /** Whether the budget ran out (the process is being closed): its messages are no longer worth reading. */
  readonly flooded: boolean;
}

export function channelBudget(channel: Readable, o: ChannelBudgetOptions): ChannelBudget {
  const maxIgnored = o.maxIgnored ?? 1000;
  const windowMs = o.windowMs ?? 10_000;
  const reportMs = o.reportMs ?? 1000;
  const bytesPerSecond = o.bytesPerSecond ?? 1024 * 1024;
  const now = o.now ?? Date.now;

  let windowStart = now();
  let inWindow = 0;
  let unreported = 0;
  let last = { what: '', why: '' };
  let report: NodeJS.Timeout | null = null;
  let flooded = false;

  const flush = () => {
    report = null;
    if (unreported === 0) return;
    o.log.warn({ ignored: unreported, message: last.what }, `revision messages ignored: ${last.why}`);
    unreported = 0;
  };

  throttleReads(channel, bytesPerSecond);
  channel.once('close', () => {
    if (report !== null) clearTimeout(report);
    flush();
  });

  return {
    get flooded() {
      return flooded;
    },
    ignored(what, why) {
      if (flooded) return;
      const t = now();
      if (t - windowStart >= windowMs) {
        windowStart = t;
        inWindow = 0;
      }
      inWindow++;
      unreported++;
      last = { what, why };
      if (inWindow > maxIgnored) {
        flooded = true;
        if (report !== null) clearTimeout(report);
        flush();
        o.log.error(
          { ignored: inWindow, withinMs: windowMs },
          `${FLOOD_REASON}: more than ${maxIgnored} messages not of the protocol; closing it`,
        );
        channel.destroy();
        return o.onFlood(FLOOD_REASON);
      }
      // The first of a burst is logged at once; the rest of it once the report interval has passed, as one line.
      if (report === null) {
        flush();
        report = setTimeout(flush, reportMs);
        report.unref();
      }
    },
  };
}

/** At most `bytesPerSecond` read from `stream` a second: past it the stream pauses until the second is over. */
function throttleReads(stream: Readable, bytesPerSecond: number): void {
  let second = 0;
  let read = 0;
  stream.on('data', (chunk: Buffer) => {
    const t = Math.floor(Date.now() / 1000);
    if (t !== second) {
      second = t;
      read = 0;
    }
    read += chunk.length;
    if (read >= bytesPerSecond && !stream.isPaused()) {
      stream.pause();
      const resume = setTimeout(() => stream.resume(), 1000 - (Date.now() % 1000));
      resume.unref();
    }
  });
}
