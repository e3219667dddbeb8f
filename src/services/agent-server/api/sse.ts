import type { Frame } from '../runs/frames.ts';

/**
 * A server-sent events response: `event: <name>` / `data: <json>` / blank
 * line per frame, written as frames come (never buffered to the end), and a
 * `: heartbeat` comment after `heartbeatMs` without a frame, so proxies and
 * clients keep an idle stream open. `onCancel` runs once when the client
 * goes away before the end (the response stream is cancelled, or the
 * request aborted).
 */
export interface SseOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly heartbeatMs: number;
  readonly onCancel: () => void;
  /** The request's signal: aborted when the client disconnects. */
  readonly signal?: AbortSignal;
  /**
   * Send a `: open` comment at once: proxies (the edge) pass the response on with its first bytes, and a client that
   * waits for the stream to be open before it acts (the SDK's protocol streams) should not wait for the first event.
   */
  readonly open?: boolean;
}

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode(': heartbeat\n\n');
const OPEN = encoder.encode(': open\n\n');

export function encodeFrame({ event, data, id }: Frame): Uint8Array {
  return encoder.encode(
    `event: ${event.replace(/[\r\n]/g, ' ')}\ndata: ${data}\n${id === undefined ? '' : `id: ${id}\n`}\n`,
  );
}

export function sseResponse(
  frames: AsyncIterable<Frame>,
  { headers, heartbeatMs, onCancel, signal, open = false }: SseOptions,
): Response {
  const iterator = frames[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  let finished = false;
  const cancel = () => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    signal?.removeEventListener('abort', cancel);
    onCancel();
    void iterator.return?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const beat = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          if (finished) return;
          controller.enqueue(HEARTBEAT);
          beat();
        }, heartbeatMs);
        timer.unref();
      };
      signal?.addEventListener('abort', cancel, { once: true });
      if (open) controller.enqueue(OPEN);
      beat();
      void (async () => {
        try {
          for (;;) {
            const next = await iterator.next();
            if (finished) return;
            if (next.done) break;
            controller.enqueue(encodeFrame(next.value));
            beat();
          }
          finished = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', cancel);
          controller.close();
        } catch (err) {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          controller.error(err);
        }
      })();
    },
    cancel,
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      ...headers,
    },
  });
}
