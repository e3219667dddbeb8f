/**
 * What the soak sends, one identity per request so each request maps to exactly one bucket:
 * - hot: a few identities per rule, each paced at 2-5× its refill rate, so their buckets empty early and then admit
 *   exactly their refill;
 * - cold: the n-th identity of a population (API keys, user ids with their IPs, bare IPs) across several rules.
 */

export interface Shot {
  readonly cls: string;
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The client address the edge will see (X-Forwarded-For, believed from loopback). */
  readonly ip: string;
  /** The rule that must decide it. */
  readonly rule: string;
}

/** Distinct loopback-free addresses: 10.1.0.0 and up for the population, 10.200/10.201 for hot clients. */
const ipOf = (n: number) => `10.${1 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;

export const HOT = [
  {
    cls: 'hot runs-query (api-key 15/10s)',
    ids: 20,
    perSecond: 3,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'POST',
      path: '/runs/query',
      headers: { 'x-api-key': `soak-hot-q-${k}` },
      ip: '10.199.0.1',
      rule: 'runs-query',
    }),
  },
  {
    cls: 'hot runs-stats (api-key 1/10s)',
    ids: 10,
    perSecond: 0.5,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: '/runs/stats',
      headers: { 'x-api-key': `soak-hot-s-${k}` },
      ip: '10.199.0.1',
      rule: 'runs-stats',
    }),
  },
  {
    cls: 'hot repos (user-ip 100/60s)',
    ids: 10,
    perSecond: 6,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: '/repos/soak',
      headers: { 'x-user-id': `soak-hot-u-${k}` },
      ip: `10.200.0.${k}`,
      rule: 'repos',
    }),
  },
  {
    cls: 'hot public (ip 100/60s)',
    ids: 10,
    perSecond: 6,
    shot: (k: number): Shot => ({
      cls: '',
      method: 'GET',
      path: `/pages/${k}`,
      headers: {},
      ip: `10.201.0.${k}`,
      rule: 'public',
    }),
  },
].map((h) => ({ ...h, shot: (k: number): Shot => ({ ...h.shot(k), cls: h.cls }) }));

/** The n-th identity of the population, as one request (the kind and the rule rotate with n). */
export function coldShot(n: number): Shot {
  const ip = ipOf(n);
  switch (n % 6) {
    case 0:
      return {
        cls: 'cold default (api-key)',
        method: 'GET',
        path: `/threads/${n}`,
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'default',
      };
    case 1:
      return {
        cls: 'cold default (user-ip)',
        method: 'GET',
        path: `/threads/${n}/state`,
        headers: { 'x-user-id': `soak-user-${n}` },
        ip,
        rule: 'default',
      };
    case 2:
      return { cls: 'cold public (ip)', method: 'GET', path: `/docs/${n}`, headers: {}, ip, rule: 'public' };
    case 3:
      return {
        cls: 'cold runs-query (api-key)',
        method: 'POST',
        path: '/runs/query',
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'runs-query',
      };
    case 4:
      return {
        cls: 'cold deletion (api-key)',
        method: 'DELETE',
        path: `/sessions/${n}`,
        headers: { 'x-api-key': `soak-key-${n}` },
        ip,
        rule: 'deletion',
      };
    default:
      return {
        cls: 'cold commits (user-ip)',
        method: 'GET',
        path: `/commits/${n}`,
        headers: { 'x-user-id': `soak-user-${n}` },
        ip,
        rule: 'commits',
      };
  }
}
