import { canBeKey } from '../keys/key-format.ts';
import type { KeyRegistry } from '../keys/types.ts';
import { memoKey } from '../memo/memo-key.ts';
import { RecentlyUsed } from '../memo/recently-used.ts';

/** True when the registry knows the key; a promise only when the answer is not remembered yet. */
export type KeyCheck = (key: string) => boolean | Promise<boolean>;

export interface KeyCheckOptions {
  /** Keys remembered (per generation; see RecentlyUsed). */
  readonly size?: number;
  /** How long an unknown key stays unknown before the registry is asked again. */
  readonly unknownForMs?: number;
  /** How long a known key stays known before the registry is asked again (a revoked key stops within it). */
  readonly knownForMs?: number;
  readonly now?: () => number;
}

/**
 * KEY_CHECK: whether an `x-api-key` is one the key registry holds. A value
 * that cannot be a key (not `gwk_` + 43 characters) is unknown at once; other
 * answers are remembered, so a known key costs one Map lookup after its first
 * request: a known key is asked about again after `knownForMs` (so a revoked
 * key stops buying buckets within it), an unknown one after `unknownForMs`. When the registry
 * cannot answer (its Redis is down), the key is let through unremembered:
 * the check keeps fake keys from buying buckets, it is not authentication
 * (the upstream still authenticates every request).
 */
export function keyCheck(
  registry: Pick<KeyRegistry, 'findKey'>,
  { size = 50_000, unknownForMs = 10_000, knownForMs = 60_000, now = Date.now }: KeyCheckOptions = {},
): KeyCheck {
  const answers = new RecentlyUsed<string, { known: boolean; until: number }>(size);
  return (key) => {
    if (!canBeKey(key)) return false; // no registry holds it: nothing to ask, nothing to remember
    const memo = memoKey(key); // bounded per entry, whatever the key's length
    const answer = answers.get(memo);
    if (answer !== undefined && answer.until > now()) return answer.known;
    return registry.findKey(key).then(
      (record) => {
        const known = record !== null;
        answers.set(memo, { known, until: now() + (known ? knownForMs : unknownForMs) });
        return known;
      },
      () => true,
    );
  };
}
