import { Cron } from 'croner';

/**
 * Cron schedules, read in UTC: five fields (minute hour day month weekday),
 * or six with seconds first. `nextRunDate` is the first time strictly
 * after `from`; null when the schedule never runs again or that time is
 * past the cron's end.
 */
export function scheduleError(schedule: string): string | null {
  try {
    parse(schedule);
    return null;
  } catch (err) {
    return (err as Error).message.replace(/^CronPattern: /, '');
  }
}

function nextRunAfter(schedule: string, from: Date): Date | null {
  return parse(schedule).nextRun(from);
}

/** When the cron runs next after `from`: null once past its end. */
export function nextRunDate(schedule: string, endTime: string | null, from: Date): string | null {
  const next = nextRunAfter(schedule, from);
  if (next === null || (endTime !== null && next.getTime() > Date.parse(endTime))) return null;
  return next.toISOString();
}

function parse(schedule: string): Cron {
  return new Cron(schedule, { timezone: 'UTC', paused: true });
}
