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
  readonly now?: () => number;
}

const KNOWN = Infinity;

/**
 * KEY_CHECK: whether an `x-api-key` is one the key registry holds. A value
 * that cannot be a key (not `gwk_` + 43 characters) is unknown at once; other
 * answers are remembered, so a known key costs one Map lookup after its first
 * request: a known key stays known (the registry has no revocation), an
 * unknown one is asked about again after `unknownForMs`. When the registry
 * cannot answer (its Redis is down), the key is let through unremembered:
 * the check keeps fake keys from buying buckets, it is not authentication
 * (the upstream still authenticates every request).
 */
export function keyCheck(
  registry: Pick<KeyRegistry, 'findKey'>,
  { size = 50_000, unknownForMs = 10_000, now = Date.now }: KeyCheckOptions = {},
): KeyCheck {
  const answers = new RecentlyUsed<string, number>(size); // KNOWN, or until when the key counts as unknown
  return (key) => {
    if (!canBeKey(key)) return false; // no registry holds it: nothing to ask, nothing to remember
    const memo = memoKey(key); // bounded per entry, whatever the key's length
    const until = answers.get(memo);
    if (until === KNOWN) return true;
    if (until !== undefined && until > now()) return false;
    return registry.findKey(key).then(
      (record) => {
        answers.set(memo, record === null ? now() + unknownForMs : KNOWN);
        return record !== null;
      },
      () => true,
    );
  };
}
