import { isIP } from 'node:net';

/**
 * Identity: what a rate-limit rule counts by. Every kind is one row of
 * IDENTITIES; the rule schema's `by`, the presence bits of the compiled
 * matcher (and the code it generates), `explain`, `lint`, the edge and the CLI
 * all read this table, so adding a kind is a row here plus its tests.
 *
 * A row says:
 * - `header`: the request header the kind reads. A kind with a header is
 *   present when that header is non-empty (a repeated header, an array, when
 *   any of its values is); a kind without one (null) is always present.
 * - `form`: the identity string a bucket is keyed by, from the header's value
 *   (empty for a kind without a header) and the client IP (already reduced
 *   by `ipIdentity`).
 *
 * The order of the rows with a header fixes their presence bits: the first
 * such row is bit 0, the next bit 1, and so on.
 */
export interface IdentitySpec {
  readonly header: string | null;
  readonly form: (value: string, ip: string) => string;
}

export const IDENTITIES = {
  'api-key': { header: 'x-api-key', form: (key: string) => key },
  // User id and IP joined with a NUL, which header values cannot hold, so two pairs never collide.
  'user-ip': { header: 'x-user-id', form: (user: string, ip: string) => `${user}\u0000${ip}` },
  ip: { header: null, form: (_: string, ip: string) => ip },
} as const satisfies Record<string, IdentitySpec>;

/** What a limit counts by (the `by` of a rule file's limit). */
export type IdentityKind = keyof typeof IDENTITIES;
export const IDENTITY_KINDS = Object.keys(IDENTITIES) as readonly IdentityKind[];

export type Headers = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What identities are read from: a request's headers (lower-case names, as Node gives them) and its client IP. */
export interface IdentitySource {
  readonly headers: Headers;
  /** The client address, as `ipIdentity` reduced it. */
  readonly ip: string;
}

/** The header of every kind that has one, in table order: index i is presence bit i. */
export const IDENTITY_HEADERS: readonly string[] = IDENTITY_KINDS.flatMap((k) => {
  const header: string | null = IDENTITIES[k].header;
  return header === null ? [] : [header];
});

/**
 * Which identities a request carries: bit i set when the header
 * IDENTITY_HEADERS[i] is present (kinds without a header are always there).
 */
export type Presence = number;
/** Every presence, 0 to 2^(headers) - 1. */
export const PRESENCES: readonly Presence[] = Array.from({ length: 1 << IDENTITY_HEADERS.length }, (_, q) => q);

/** Per kind, its presence bit as a mask; 0 for a kind that is always present. */
const PRESENCE_MASK = Object.fromEntries(
  IDENTITY_KINDS.map((k) => {
    const header: string | null = IDENTITIES[k].header;
    return [k, header === null ? 0 : 1 << IDENTITY_HEADERS.indexOf(header)];
  }),
) as Readonly<Record<IdentityKind, number>>;

/**
 * A header's value when present and non-empty. A repeated header (an array)
 * counts by its non-empty values joined as Node joins them.
 */
export function headerValue(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  if (typeof v === 'string') return v.length > 0 ? v : undefined;
  if (v === undefined) return undefined;
  const joined = v.filter((x) => x.length > 0).join(', ');
  return joined.length > 0 ? joined : undefined;
}

/** The presence of a request's headers. (The compiled matcher computes the same in generated code, entry-code.ts.) */
export function presenceOf(headers: Headers): Presence {
  let q = 0;
  for (let i = 0; i < IDENTITY_HEADERS.length; i++)
    if (headerValue(headers, IDENTITY_HEADERS[i]!) !== undefined) q |= 1 << i;
  return q;
}

export function identityPresent(by: IdentityKind, presence: Presence): boolean {
  const mask = PRESENCE_MASK[by];
  return mask === 0 || (presence & mask) !== 0;
}

/** The headers that `presence` carries, in table order. */
export function presentHeaders(presence: Presence): string[] {
  return IDENTITY_HEADERS.filter((_, i) => (presence & (1 << i)) !== 0);
}

/** The value a limit counts by, for a request that carries its identity (see `identityPresent`). */
export function identityOf(request: IdentitySource, by: IdentityKind): string {
  const header: string | null = IDENTITIES[by].header;
  return IDENTITIES[by].form(header === null ? '' : headerValue(request.headers, header)!, request.ip);
}

/**
 * The value an IP identity counts by (`ip`, and the IP of `user-ip`). An IPv6
 * client usually holds a whole /64 (and can rotate through it freely), so
 * IPv6 addresses are keyed by their first `ipv6PrefixBits` bits; IPv4
 * addresses by themselves.
 */
export function ipIdentity(ip: string, ipv6PrefixBits = 64): string {
  if (isIP(ip) !== 6) return ip;
  const groups = expandIPv6(ip);
  const out: string[] = [];
  for (let g = 0; g < 8; g++) {
    const keep = Math.max(0, Math.min(16, ipv6PrefixBits - g * 16));
    out.push((keep === 0 ? 0 : groups[g]! & (0xffff << (16 - keep)) & 0xffff).toString(16));
  }
  return `${out.join(':')}/${ipv6PrefixBits}`;
}

function expandIPv6(ip: string): number[] {
  let text = ip.split('%')[0]!; // zone id
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((h) => parseInt(h, 16));
}
