import type { MatchCondition } from '@langchain/langgraph-checkpoint';

export function startsWith(namespace: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= namespace.length && prefix.every((label, i) => namespace[i] === label);
}

/**
 * A namespace match condition as InMemoryStore reads it: a prefix or a suffix of labels, `*` matching any one label.
 */
export function conditionHolds({ matchType, path }: MatchCondition, namespace: readonly string[]): boolean {
  if (path.length > namespace.length) return false;
  const start = matchType === 'prefix' ? 0 : namespace.length - path.length;
  return path.every((label, i) => label === '*' || namespace[start + i] === label);
}

/**
 * A search filter on one field, as InMemoryStore reads it: a value to equal, or operators ($eq, $ne, $gt, $gte, $lt,
 * $lte, $in, $nin).
 */
export function matches(actual: unknown, wanted: unknown): boolean {
  if (
    typeof wanted !== 'object' ||
    wanted === null ||
    Array.isArray(wanted) ||
    !Object.keys(wanted).some((k) => k.startsWith('$'))
  )
    return actual === wanted;
  return Object.entries(wanted).every(([op, value]) => {
    switch (op) {
      case '$eq':
        return actual === value;
      case '$ne':
        return actual !== value;
      case '$gt':
        return Number(actual) > Number(value);
      case '$gte':
        return Number(actual) >= Number(value);
      case '$lt':
        return Number(actual) < Number(value);
      case '$lte':
        return Number(actual) <= Number(value);
      case '$in':
        return Array.isArray(value) && value.includes(actual);
      case '$nin':
        return !Array.isArray(value) || !value.includes(actual);
      default:
        return !op.startsWith('$');
    }
  });
}
