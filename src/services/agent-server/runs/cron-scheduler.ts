import { allowAll } from '../auth/filters.ts';
import type { ServerContext } from '../context.ts';
import { nextRunDate } from './cron-expressions.ts';
import { startRun } from '../api/runs/start-run.ts';
import { runCreate } from '../api/runs/schemas.ts';
import type { Cron } from '../store/records.ts';

/**
 * Starts the runs of crons when they are due. Every `everyMs` it reads the
 * crons, and for each enabled one whose `next_run_date` has come it claims
 * that date in the store (so of several servers sharing a Redis store only
 * one fires it), moves `next_run_date` to the next time after now, then
 * starts the run in the background as the cron's creator. Times missed
 * while no server ran are not made up: the cron runs once, then follows its
 * schedule. A run that cannot start (its thread is busy and the strategy is
 * `reject`, its assistant is gone) is logged and skipped.
 */
export class CronScheduler {
  private timer: NodeJS.Timeout | undefined;
  private tick: Promise<void> | null = null;

  constructor(
    private readonly ctx: ServerContext,
    private readonly everyMs = 1000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.tick ??= this.fireDue(new Date()).finally(() => (this.tick = null));
    }, this.everyMs);
    this.timer.unref();
  }

  /** Stops ticking and waits for a tick under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.tick;
  }

  /** Fires every cron due at `now` (a tick; tests call it directly). */
  async fireDue(now: Date): Promise<void> {
    const { store, log } = this.ctx;
    try {
      for (const cron of await store.listCrons()) {
        if (!cron.enabled || cron.next_run_date === null || Date.parse(cron.next_run_date) > now.getTime()) continue;
        if (!(await store.claim(`cron:${cron.cron_id}:${cron.next_run_date}`, 10 * 60_000))) continue;
        const fresh = await store.getCron(cron.cron_id);
        if (fresh === null) continue;
        await store.putCron({
          ...fresh,
          next_run_date: nextRunDate(fresh.schedule, fresh.end_time, now, fresh.timezone ?? null),
          updated_at: now.toISOString(),
        });
        await this.fire(fresh).catch((err: Error) =>
          log.warn({ cron_id: cron.cron_id, err: err.message }, 'cron run not started'),
        );
      }
    } catch (err) {
      log.error({ err: (err as Error).message }, 'cron scheduler tick failed');
    }
  }

  private async fire(cron: Cron): Promise<void> {
    const body = runCreate.parse({
      ...cron.payload,
      assistant_id: cron.assistant_id,
      on_completion: cron.on_run_completed,
    });
    const user = { ...cron.run_as, is_authenticated: true };
    const { handle, run } = await startRun({ user, authorize: allowAll }, this.ctx, body, cron.thread_id, true);
    handle.detach();
    this.ctx.log.info({ cron_id: cron.cron_id, run_id: run.run_id }, 'cron run started');
  }
}
