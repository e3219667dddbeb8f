import { hash } from 'node:crypto';

/**
 * The key a per-identity memo (the KEY_CHECK answers, the bucket-key digests) stores for a header-derived text, so
 * that what a memo holds per entry is bounded whatever a client sends: a text of at most MEMO_INLINE_MAX characters
 * is its own key (a known key then still costs one Map lookup, ~25 ns), a longer one is replaced by a NUL and its
 * SHA-256 (44 characters; ~400 ns, paid only by texts no real identity has). Header values cannot hold a NUL, so a
 * digest never equals a text kept as itself.
 *
 * 128 covers every identity the shipped services mint with room to spare (an API key is 47 characters, a UUID user
 * id with an IPv6 /64 about 60), and bounds a memo of 100,000 entries to about 20 MB.
 */
export const MEMO_INLINE_MAX = 128;

export function memoKey(text: string): string {
  return text.length <= MEMO_INLINE_MAX ? text : '\u0000' + hash('sha256', text, 'base64');
}
