/**
 * Graph values to JSON as the public server writes them: a LangChain
 * message becomes its dict form (`{"type": "ai", "content": ..., "id": ...}`,
 * from `toDict()`), anything else is plain JSON (functions dropped, bigints
 * as strings). A cycle throws, as JSON.stringify does.
 */
export function jsonText(value: unknown): string {
  return (
    JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
      const raw = (this as Record<string, unknown> | undefined)?.[key] ?? v;
      if (typeof raw === 'object' && raw !== null) {
        const toDict = (raw as { toDict?: unknown }).toDict;
        if (typeof toDict === 'function') {
          const { type, data } = toDict.call(raw) as { type: string; data: Record<string, unknown> };
          return { ...data, type };
        }
      }
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'function' || typeof v === 'symbol') return undefined;
      return v;
    }) ?? 'null'
  );
}

/** `value` as plain JSON data (what a store keeps and an answer carries). */
export function toPlain<T = unknown>(value: unknown): T {
  return JSON.parse(jsonText(value)) as T;
}
