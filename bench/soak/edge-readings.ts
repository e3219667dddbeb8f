/**
 * What the soak reads from the edge: a memory sample from its own /metrics (prom-client's default metrics under the
 * `gateway_` prefix), and a full GC through its V8 inspector before a sample, so the sample is the live heap.
 */
import { WebSocket } from 'undici';

export interface Sample {
  readonly t: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  /** The edge's event-loop lag (prom-client's sampled figure), seconds. */
  readonly lag: number;
  readonly requests: number;
  /** Distinct population identities sent so far. */
  readonly identities: number;
  /** Taken right after a full GC. */
  readonly gc: boolean;
}

/** A metric of the edge's /metrics text (prom-client's default metrics under the `gateway_` prefix). */
export function gauge(text: string, ...names: string[]): number {
  for (const name of names) {
    const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
    if (m) return Number(m[1]);
  }
  return NaN;
}

export async function scrape(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`);
  return res.text();
}

/** The edge's V8 inspector, for one command: HeapProfiler.collectGarbage. */
export async function connectInspector(port: number): Promise<{ collectGarbage(): Promise<void>; close(): void }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', reject, { once: true });
  });
  let id = 0;
  const waiting = new Map<number, () => void>();
  ws.addEventListener('message', (event) => {
    const reply = JSON.parse(String(event.data)) as { id?: number };
    if (reply.id !== undefined) waiting.get(reply.id)?.();
  });
  return {
    collectGarbage: () =>
      new Promise<void>((resolve) => {
        const n = ++id;
        waiting.set(n, () => (waiting.delete(n), resolve()));
        ws.send(JSON.stringify({ id: n, method: 'HeapProfiler.collectGarbage' }));
      }),
    close: () => ws.close(),
  };
}
