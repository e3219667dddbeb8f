import { Writable } from 'node:stream';
import { Log, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** Longest line kept from a pod's log (the rest of it is cut), as the local host bounds its processes' lines. */
const MAX_LINE = 16 * 1024;

/**
 * A revision's pods' output, followed through the pod log API (`pods/log`, the Role's) and handed over line by line:
 * what the local host reads from its processes' pipes. Each pod is followed once, from `since` (when the host started
 * the revision: a gateway taking over a running revision does not replay what was already read), and every follow
 * ends at `close`.
 */
export class PodLogs {
  private readonly followed = new Map<string, AbortController | null>();
  private closed = false;

  constructor(
    private readonly o: {
      readonly kubeConfig: KubeConfig;
      readonly namespace: string;
      readonly container: string;
      readonly since: Date;
      readonly onLine: (line: string) => void;
      readonly log: Logger;
    },
  ) {}

  /** Follows each of these pods not followed yet (the running ones: a waiting container has no log to read). */
  follow(podNames: Iterable<string>): void {
    for (const pod of podNames) {
      if (this.closed || this.followed.has(pod)) continue;
      this.followed.set(pod, null);
      void new Log(this.o.kubeConfig)
        .log(this.o.namespace, pod, this.o.container, this.lines(), {
          follow: true,
          sinceTime: this.o.since.toISOString(),
        })
        .then(
          (abort) => (this.closed ? abort.abort() : this.followed.set(pod, abort)),
          (err: unknown) => {
            this.followed.delete(pod); // The next status update tries again.
            this.o.log.debug({ pod, err: (err as Error).message }, 'cannot follow the pod log yet');
          },
        );
    }
  }

  close(): void {
    this.closed = true;
    for (const abort of this.followed.values()) abort?.abort();
    this.followed.clear();
  }

  private lines(): Writable {
    let rest = '';
    const onLine = this.o.onLine;
    return new Writable({
      write(chunk: Buffer, _encoding, done) {
        const parts = (rest + chunk.toString('utf8')).split('\n');
        rest = parts.pop()!.slice(0, MAX_LINE);
        for (const line of parts) if (line !== '') onLine(line.slice(0, MAX_LINE));
        done();
      },
      final(done) {
        if (rest !== '') onLine(rest);
        done();
      },
    });
  }
}
