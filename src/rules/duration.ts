const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const DURATION = /^([1-9][0-9]{0,8})(s|m|h|d)$/;

/** `10s`, `60s`, `10m`, `1h`, `1d` → seconds; null when the text is not such a duration. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text);
  return m ? Number(m[1]) * UNITS[m[2]!]! : null;
}
