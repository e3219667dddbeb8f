import { matchesFilter, type Filter } from '../../auth/filters.ts';
import { ApiError } from '../../errors.ts';
import type { Json } from '../../store/records.ts';

/**
 * A `store` authorization handler's filter, applied as the official server applies it: over the item's value with
 * its `namespace` (a list of labels, so `{namespace: {$contains: user}}` works) and `key` laid on top.
 */
export function visibleItem(
  item: { namespace: string[]; key?: string; value?: Record<string, unknown> | null },
  filter: Filter | null,
): boolean {
  const metadata = {
    ...item.value,
    namespace: item.namespace,
    ...(item.key === undefined ? {} : { key: item.key }),
  } as Json;
  return matchesFilter(metadata, filter);
}

/** As the official server: pages of 1000 are scanned, at most 10,000 entries, for one filtered page. */
const SCAN_PAGE = 1000;
const SCAN_MAX = 10_000;

/**
 * One page (`limit` after `offset`) of what `fetch` lists that `keep` keeps: scans `fetch` in pages until the page is
 * full or the list ends; past SCAN_MAX scanned entries without filling it, 400 (narrow the query), as the official
 * server answers.
 */
export async function filteredPage<T>(
  fetch: (limit: number, offset: number) => Promise<T[]>,
  keep: (entry: T) => boolean,
  { limit, offset }: { limit: number; offset: number },
): Promise<T[]> {
  const kept: T[] = [];
  const wanted = offset + limit;
  let scanned = 0;
  while (kept.length < wanted && scanned < SCAN_MAX) {
    const page = Math.min(SCAN_PAGE, SCAN_MAX - scanned);
    const found = await fetch(page, scanned);
    scanned += found.length;
    kept.push(...found.filter(keep));
    if (found.length < page) return kept.slice(offset, wanted);
  }
  if (kept.length < wanted && scanned >= SCAN_MAX)
    throw new ApiError(400, 'Authenticated store query exceeded maximum scan limit. Narrow the namespace or filters.');
  return kept.slice(offset, wanted);
}
