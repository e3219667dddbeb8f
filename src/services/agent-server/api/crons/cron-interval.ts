import { Cron } from 'croner';

/** The parsed fields croner keeps (internal, but stable within croner 11; cron-interval.test.ts pins the reading). */
interface ParsedState {
  /** Set for a single date (an ISO time instead of a pattern): one run. */
  readonly once?: unknown;
  readonly pattern: {
    readonly second: readonly number[];
    readonly minute: readonly number[];
    readonly hour: readonly number[];
  };
}

/**
 * The shortest time, in seconds, between two runs of a cron schedule (UTC), or null when it runs at most once (a
 * fixed time). Computed from the seconds, minutes and hours the schedule allows, not by listing runs (croner takes
 * about a millisecond per run, and a request should not pay for hundreds): within a minute, across minutes of an
 * hour, across hours of a day, and across midnight as if the next day were allowed too. That last one is a lower
 * bound (a weekday or day-of-month field may leave the next day out), so a schedule is never judged slower than it is.
 */
export function shortestInterval(schedule: string): number | null {
  const cron = new Cron(schedule, { timezone: 'UTC', paused: true });
  const state = (cron as unknown as { _states: ParsedState })._states;
  if (state.once) return null;
  const p = state.pattern;
  const seconds = allowed(p.second);
  const minutes = allowed(p.minute);
  const hours = allowed(p.hour);
  // Offsets of the first and last run inside a minute, an hour, a day.
  const inMinute = { first: seconds[0]!, last: seconds.at(-1)! };
  const inHour = { first: minutes[0]! * 60 + inMinute.first, last: minutes.at(-1)! * 60 + inMinute.last };
  const inDay = { first: hours[0]! * 3600 + inHour.first, last: hours.at(-1)! * 3600 + inHour.last };
  return Math.min(
    smallestStep(seconds, 1) ?? Infinity,
    (smallestStep(minutes, 60) ?? Infinity) - (inMinute.last - inMinute.first),
    (smallestStep(hours, 3600) ?? Infinity) - (inHour.last - inHour.first),
    86_400 - (inDay.last - inDay.first),
  );
}

function allowed(field: readonly number[]): number[] {
  const values: number[] = [];
  field.forEach((on, i) => {
    if (on) values.push(i);
  });
  return values;
}

/** The smallest difference between consecutive allowed values, times `unit`; null with fewer than two. */
function smallestStep(values: readonly number[], unit: number): number | null {
  let best: number | null = null;
  for (let i = 1; i < values.length; i++) {
    const step = (values[i]! - values[i - 1]!) * unit;
    if (best === null || step < best) best = step;
  }
  return best;
}
