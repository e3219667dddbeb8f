import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BuildQueue } from '../builds/build-queue.ts';
import type { Builds } from '../builds/builds.ts';
import type { PushPoller } from '../builds/push-poller.ts';
import { resumeServing } from '../serving/resume-serving.ts';
import type { Serving } from '../serving/serving.ts';
import type { ControlPlaneStore } from '../store.ts';
import { checkServed } from './served-check.ts';
import { LeaseClosedError, RedisLease, soleLease, type Lease } from './lease.ts';

/**
 * What only one gateway on a store does, done by the one holding its hosting lease: recovering unfinished builds,
 * serving the deployments again (resume), building (revisions another gateway queued are picked up every few seconds, and its
 * deletes and redeploys done: served-check.ts), polling repos for build_on_push. Another gateway on the same store (a second replica, a rollback) waits for the
 * lease and answers the API meanwhile; it takes over when the holder drains (the lease is released after its routes
 * were marked starting) or dies (the lease lapses after its ttl). Without Redis the lease is always held.
 */
export interface HostingOptions {
  /** The store's Redis; null = in memory (one gateway, always hosting). */
  readonly redis: Redis | null;
  /** The lease's key: one per store prefix and region. */
  readonly key: string;
  readonly ttlMs: number;
  readonly store: ControlPlaneStore;
  readonly builds: Builds;
  readonly queue: BuildQueue;
  readonly serving: Serving | null;
  readonly poller: PushPoller;
  readonly log: Logger;
  /** How often the holder looks for what another gateway asked (queued revisions, deletes, redeploys; default 2 s). */
  readonly pickUpMs?: number;
}

export class Hosting {
  readonly lease: Lease;
  /** Settles once this gateway hosts and has served the deployments again (or closed before it hosted). */
  readonly resumed: Promise<void>;
  private sweep: NodeJS.Timeout | undefined;
  private picking = false;
  private markRecovered: () => void = () => {};
  private readonly recovered = new Promise<void>((resolve) => (this.markRecovered = resolve));

  private lostOnce = false;
  private closing = false;

  constructor(private readonly o: HostingOptions) {
    this.lease = o.redis
      ? new RedisLease(o.redis, {
          key: o.key,
          ttlMs: o.ttlMs,
          log: o.log,
          // Lost (another gateway has it, or Redis was out of reach for a whole ttl): stand down; taken again: host.
          onLost: () => void this.standDown(),
          onAcquired: () => void (this.lostOnce && !this.closing && this.host()),
        })
      : soleLease();
    this.resumed = this.lease.acquired().then(
      () => this.host(),
      (err: unknown) => {
        if (!(err instanceof LeaseClosedError)) throw err;
      },
    );
  }

  /** After the first try for the lease: when it was taken, once the unfinished builds are recovered. */
  async started(): Promise<void> {
    await this.lease.tried();
    if (this.lease.held) await this.recovered;
  }

  /** Whether this gateway hosts now. */
  get held(): boolean {
    return this.lease.held;
  }

  /** Stops waiting for the lease (a gateway that never hosted); the holder keeps it until `release`. */
  async stopWaiting(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweep);
    if (!this.lease.held) await this.lease.close();
    await this.resumed;
  }

  /** After the routes were marked starting and the processes stopped: the next gateway may host. */
  release(): Promise<void> {
    return this.lease.close();
  }

  /** The lease was lost: nothing more is built, polled or served here until it is taken again. */
  private async standDown(): Promise<void> {
    this.lostOnce = true;
    clearInterval(this.sweep);
    this.o.poller.stop();
    await this.resumed;
    await this.o.serving?.standDown();
    this.o.log.warn('stood down: another gateway hosts the deployments now (or will, once it takes the lease)');
  }

  private async host(): Promise<void> {
    const { builds, serving, store, log } = this.o;
    try {
      const r = await builds.recover();
      if (r.requeued + r.interrupted > 0) log.info(r, 'recovered unfinished revisions');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'cannot recover the unfinished revisions');
    } finally {
      this.markRecovered();
    }
    this.o.poller.start();
    this.sweep = setInterval(() => void this.pickUp(), this.o.pickUpMs ?? 2000);
    this.sweep.unref();
    if (serving) await resumeServing(store, serving, log);
  }

  /** What another gateway on the store asked: its queued revisions built here, its deletes and redeploys done here. */
  private async pickUp(): Promise<void> {
    if (!this.lease.held || this.picking) return;
    this.picking = true;
    const { builds, serving, store, queue, log } = this.o;
    try {
      await builds.pickUpQueued();
      if (serving) await checkServed(store, serving, builds, queue, log);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'cannot look for what another gateway asked');
    } finally {
      this.picking = false;
    }
  }
}
