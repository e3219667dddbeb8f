import { isDeepStrictEqual } from 'node:util';
import { ownValue } from '../../shared/own-value.ts';
import type { Context } from 'hono';

/**
 * Search answers as the public server gives them: a bare JSON array of one
 * page, sorted, with `X-Pagination-Total` (all matches) and, when more
 * follow, `X-Pagination-Next` (the offset of the next page).
 */
export interface PageRequest<K extends string> {
  readonly limit: number;
  readonly offset: number;
  readonly sort_by?: K | null | undefined;
  readonly sort_order?: 'asc' | 'desc' | null | undefined;
  readonly select?: readonly string[] | null | undefined;
}

export function pageAnswer<T extends object, K extends string & keyof T>(
  c: Context,
  items: readonly T[],
  request: PageRequest<K>,
  defaults: { sortBy: K; tieBreak: K },
): Response {
  const by = request.sort_by ?? defaults.sortBy;
  const sign = (request.sort_order ?? 'desc') === 'asc' ? 1 : -1;
  const sorted = [...items].sort(
    (a, b) => sign * (compare(a[by], b[by]) || compare(a[defaults.tieBreak], b[defaults.tieBreak])),
  );
  const page = sorted.slice(request.offset, request.offset + request.limit);
  c.header('X-Pagination-Total', String(sorted.length));
  if (request.offset + page.length < sorted.length)
    c.header('X-Pagination-Next', String(request.offset + request.limit));
  const select = request.select;
  const shown =
    select && select.length > 0
      ? page.map((item) => Object.fromEntries(select.map((f) => [f, (item as Record<string, unknown>)[f]])))
      : page;
  return c.json(shown);
}

/** Every key of `wanted` equals the same own key of `actual` (deep); inherited names such as `__proto__` never match. */
export function matchesExactly(
  actual: Record<string, unknown> | null | undefined,
  wanted: Record<string, unknown> | null | undefined,
): boolean {
  if (!wanted) return true;
  return Object.entries(wanted).every(([k, v]) => isDeepStrictEqual(ownValue(actual, k), v));
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === undefined || a === null) return -1;
  if (b === undefined || b === null) return 1;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
