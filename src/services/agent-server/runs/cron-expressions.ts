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

/** Null when `timezone` is an IANA timezone this runtime knows; otherwise why not. */
export function timezoneError(timezone: string): string | null {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return null;
  } catch {
    return `unknown IANA timezone "${timezone}" (e.g. Europe/Paris, America/New_York)`;
  }
}

/** When the cron runs next after `from` (its schedule read in `timezone`, default UTC): null once past its end. */
export function nextRunDate(
  schedule: string,
  endTime: string | null,
  from: Date,
  timezone: string | null = null,
): string | null {
  const next = new Cron(schedule, { timezone: timezone ?? 'UTC', paused: true }).nextRun(from);
  if (next === null || (endTime !== null && next.getTime() > Date.parse(endTime))) return null;
  return next.toISOString();
}

function parse(schedule: string): Cron {
  return new Cron(schedule, { timezone: 'UTC', paused: true });
}
