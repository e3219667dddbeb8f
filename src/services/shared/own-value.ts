/**
 * `record[key]` when `record` holds `key` as its own property, else
 * undefined: a client's JSON names (`__proto__`, `constructor`, `toString`)
 * never reach what an object inherits.
 */
export function ownValue(record: object | null | undefined, key: string): unknown {
  return record != null && Object.hasOwn(record, key) ? (record as Record<string, unknown>)[key] : undefined;
}
