import { invalid } from '../../errors.ts';
import { quotaExceeded } from '../../../shared/quota-error.ts';
import type { AgentQuotas } from '../../quotas.ts';
import type { AgentStore } from '../../store/agent-store.ts';
import { shortestInterval } from './cron-interval.ts';

/**
 * A schedule running more often than MIN_CRON_INTERVAL_SECONDS allows: 422 on `schedule`, saying the minimum. A cron
 * that fires every second starts sixty runs a minute with no client behind them.
 */
export function checkCronInterval(schedule: string, quotas: AgentQuotas): void {
  const shortest = shortestInterval(schedule);
  if (shortest === null || shortest >= quotas.minCronIntervalSeconds) return;
  throw invalid({
    loc: ['body', 'schedule'],
    msg: `runs as often as every ${shortest} s; the minimum is ${quotas.minCronIntervalSeconds} s (MIN_CRON_INTERVAL_SECONDS, set by the operator): choose a schedule that runs less often`,
    type: 'cron_interval_too_short',
  });
}

/**
 * MAX_CRONS and MAX_CRONS_PER_USER at create. Crons are few (the limit bounds them), so they are counted from the
 * list; creates are taken one at a time in this process, so concurrent ones cannot both take the last slot (servers
 * sharing one Redis may each take one: the limit is a bound on load, not a ledger).
 */
export class CronQuota {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AgentStore,
    private readonly quotas: AgentQuotas,
  ) {}

  /** Runs `put` once the server and `owner` (null: not counted per user) are under their limits; else 409. */
  async within<T>(owner: string | null, put: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(async () => {
      const crons = await this.store.listCrons();
      const { maxCrons, maxCronsPerUser } = this.quotas;
      if (crons.length >= maxCrons)
        throw quotaExceeded(
          'crons',
          `this server has ${crons.length} crons, the most MAX_CRONS (${maxCrons}) allows. Delete one (DELETE /runs/crons/{cron_id}), or ask the operator to raise MAX_CRONS.`,
        );
      const mine = owner === null ? 0 : crons.filter((cron) => cron.user_id === owner).length;
      if (owner !== null && mine >= maxCronsPerUser)
        throw quotaExceeded(
          'crons_per_user',
          `user ${owner} has ${mine} crons, the most MAX_CRONS_PER_USER (${maxCronsPerUser}) allows. Delete one (DELETE /runs/crons/{cron_id}), or ask the operator to raise MAX_CRONS_PER_USER.`,
        );
      return put();
    });
    this.tail = turn.catch(() => undefined);
    return turn;
  }
}
