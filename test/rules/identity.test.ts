import { describe, expect, it } from 'vitest';
import { applicableLimits, compile } from '../../src/rules/compile.ts';
import { explainMatch } from '../../src/rules/explain.ts';
import {
  IDENTITIES,
  IDENTITY_HEADERS,
  IDENTITY_KINDS,
  identityOf,
  identityPresent,
  ipIdentity,
  PRESENCES,
  presenceOf,
  type Headers,
  type IdentityKind,
} from '../../src/rules/identity.ts';
import { CALLERS, lint } from '../../src/rules/lint.ts';
import { parseRuleFile } from '../../src/rules/parse.ts';
import { limitSchema } from '../../src/rules/schema.ts';

/**
 * The identity table (src/rules/identity.ts) and what reads it: presence and
 * identity formation per kind, the rule schema's `by`, the presence bits of
 * the generated matcher, `explain` and `lint`.
 */

const IP = '203.0.113.7';

/** The table as the gateway documents it. Adding a kind adds a row here. */
const EXPECTED: Record<IdentityKind, { header: string | null; identity: (value: string, ip: string) => string }> = {
  'api-key': { header: 'x-api-key', identity: (key) => key },
  'user-ip': { header: 'x-user-id', identity: (user, ip) => `${user}\u0000${ip}` },
  ip: { header: null, identity: (_, ip) => ip },
};

/** The headers carrying exactly the identities of `presence`. */
function headersOf(presence: number): Record<string, string> {
  return Object.fromEntries(IDENTITY_HEADERS.flatMap((h, i) => ((presence >> i) & 1 ? [[h, `v-${h}`]] : [])));
}

/** A rule file of one rule with a limit for every kind of the table. */
const ALL_KINDS = parseRuleFile(
  `- id: every-kind
  limits:
${IDENTITY_KINDS.map((k) => `    - { by: ${k}, count: 1, per: 1s, category: C }`).join('\n')}
`,
  'every-kind.yaml',
).rules;

describe('the identity table', () => {
  it('holds exactly the documented kinds, in order, each with its header', () => {
    expect(IDENTITY_KINDS).toEqual(Object.keys(EXPECTED));
    for (const kind of IDENTITY_KINDS) expect(IDENTITIES[kind].header, kind).toBe(EXPECTED[kind].header);
  });

  it('gives the kinds with a header one presence bit each, in table order', () => {
    const withHeader = IDENTITY_KINDS.filter((k) => EXPECTED[k].header !== null);
    expect(IDENTITY_HEADERS).toEqual(withHeader.map((k) => EXPECTED[k].header));
    expect(PRESENCES).toEqual([...Array(1 << withHeader.length).keys()]);
    withHeader.forEach((kind, i) => {
      expect(identityPresent(kind, 1 << i), kind).toBe(true);
      expect(identityPresent(kind, PRESENCES.length - 1 - (1 << i)), kind).toBe(false);
    });
  });

  describe.each(IDENTITY_KINDS)('%s', (kind) => {
    const header = EXPECTED[kind].header;
    const present = (headers: Headers) => identityPresent(kind, presenceOf(headers));

    it('is present exactly when its header is non-empty (always, without a header)', () => {
      if (header === null) {
        expect(present({})).toBe(true);
        expect(present(headersOf(PRESENCES.length - 1))).toBe(true);
        return;
      }
      expect(present({})).toBe(false);
      expect(present({ [header]: '' })).toBe(false);
      expect(present({ [header]: ['', ''] })).toBe(false);
      expect(present({ [header]: 'v' })).toBe(true);
      expect(present({ [header]: ['', 'v'] })).toBe(true);
      // Another kind's header does not make this one present.
      const others = Object.fromEntries(IDENTITY_HEADERS.filter((h) => h !== header).map((h) => [h, 'v']));
      expect(present(others)).toBe(false);
    });

    it('forms its identity from its header value and the client IP', () => {
      const headers = header === null ? {} : { [header]: 'abc' };
      expect(identityOf({ headers, ip: IP }, kind)).toBe(EXPECTED[kind].identity('abc', IP));
      if (header !== null) {
        // A repeated header counts by its non-empty values, joined as Node joins them.
        const repeated = { [header]: ['a', '', 'b'] };
        expect(identityOf({ headers: repeated, ip: IP }, kind)).toBe(EXPECTED[kind].identity('a, b', IP));
      }
    });

    it('is accepted as the `by` of a limit', () => {
      expect(limitSchema.safeParse({ by: kind, count: 1, per: '1s', category: 'C' }).success).toBe(true);
    });
  });

  it('forms user-ip identities that never collide across user id and IP', () => {
    const a = identityOf({ headers: { 'x-user-id': 'u1' }, ip: '10.0.0.12' }, 'user-ip');
    const b = identityOf({ headers: { 'x-user-id': 'u11' }, ip: '0.0.0.12' }, 'user-ip');
    expect(a).toBe('u1\u000010.0.0.12');
    expect(a).not.toBe(b);
  });
});

describe('the rule schema', () => {
  it('accepts exactly the kinds of the table as `by`', () => {
    expect(limitSchema.shape.by.options).toEqual([...IDENTITY_KINDS]);
    for (const by of ['org-id', 'API-KEY', 'x-api-key', 'user_ip', '']) {
      expect(limitSchema.safeParse({ by, count: 1, per: '1s', category: 'C' }).success, by).toBe(false);
    }
  });
});

describe('the compiled matcher (generated presence code)', () => {
  it.each(PRESENCES)('applies exactly the limits whose identity presence %i carries', (presence) => {
    const headers = headersOf(presence);
    const want = IDENTITY_KINDS.filter((k) => identityPresent(k, presence));
    expect(presenceOf(headers)).toBe(presence);
    expect(
      compile(ALL_KINDS)
        .match({ method: 'GET', path: '/x', headers, ip: IP })
        ?.limits.map((l) => l.by),
    ).toEqual(want);
    expect(applicableLimits(ALL_KINDS[0]!, presence)?.map((l) => l.by)).toEqual(want);
  });

  it('reads the presence of the current table: key bit 0, user id bit 1, IP always', () => {
    const byOf = (headers: Headers) =>
      compile(ALL_KINDS)
        .match({ method: 'GET', path: '/x', headers, ip: IP })
        ?.limits.map((l) => l.by);
    expect(byOf({})).toEqual(['ip']);
    expect(byOf({ 'x-api-key': 'k' })).toEqual(['api-key', 'ip']);
    expect(byOf({ 'x-user-id': ['', 'u'] })).toEqual(['user-ip', 'ip']);
    expect(byOf({ 'x-api-key': 'k', 'x-user-id': '' })).toEqual(['api-key', 'ip']);
    expect(byOf({ 'x-api-key': 'k', 'x-user-id': 'u' })).toEqual(['api-key', 'user-ip', 'ip']);
  });
});

describe('explain and lint', () => {
  const keyed = parseRuleFile(
    `- id: keyed
  limits: [{ by: api-key, count: 1, per: 1s, category: C }]
- id: users
  limits: [{ by: user-ip, count: 1, per: 1s, category: C }]
- id: later
  match: { prefix: /x }
  limits: [{ by: api-key, count: 1, per: 1s, category: C }, { by: user-ip, count: 1, per: 1s, category: C }]
`,
    'keyed.yaml',
  );

  it('explain passes over a rule whose identities the request does not carry, by the table’s headers', () => {
    const steps = explainMatch(keyed.rules, 'GET', '/x', { 'x-user-id': 'u' });
    expect(steps.map((s) => [s.rule.id, s.decides])).toEqual([
      ['keyed', false],
      ['users', true],
    ]);
    expect(steps[0]!.reason).toContain('carries none of its identities (api-key)');
    expect(explainMatch(keyed.rules, 'GET', '/x', { 'x-api-key': 'k' })[0]!.decides).toBe(true);
  });

  it('lint names the callers of each presence by the table’s headers', () => {
    expect(CALLERS).toEqual([
      'requests without x-api-key or x-user-id',
      'requests with x-api-key only',
      'requests with x-user-id only',
      'requests with both x-api-key and x-user-id',
    ]);
    const findings = lint(keyed);
    expect(findings.map((f) => [f.rule, f.kind])).toEqual([['later', 'shadowed']]);
    expect(findings[0]!.reason).toBe(
      `never decides: earlier rule "keyed" (line 1) fits all its requests and decides first for ${CALLERS[1]}, ${CALLERS[3]}; ` +
        `earlier rule "users" (line 3) fits all its requests and decides first for ${CALLERS[2]}`,
    );
  });
});

describe('ipIdentity', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(ipIdentity('203.0.113.9')).toBe('203.0.113.9');
  });

  it('keys IPv6 by its /64: one /64 is one identity, the next /64 another', () => {
    const a = ipIdentity('2001:db8:1:2:aaaa:bbbb:cccc:dddd');
    expect(a).toBe('2001:db8:1:2:0:0:0:0/64');
    expect(ipIdentity('2001:db8:1:2::1')).toBe(a);
    expect(ipIdentity('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe(a);
    expect(ipIdentity('2001:db8:1:3::1')).not.toBe(a);
  });

  it('honours another prefix length, including one that splits a group', () => {
    expect(ipIdentity('2001:db8:1:2ff::', 56)).toBe('2001:db8:1:200:0:0:0:0/56');
    expect(ipIdentity('2001:db8:1:2::1', 48)).toBe('2001:db8:1:0:0:0:0:0/48');
    expect(ipIdentity('2001:db8::1', 128)).toBe('2001:db8:0:0:0:0:0:1/128');
  });

  it('expands :: anywhere and ignores a zone id', () => {
    expect(ipIdentity('::1')).toBe('0:0:0:0:0:0:0:0/64');
    expect(ipIdentity('fe80::1%eth0')).toBe('fe80:0:0:0:0:0:0:0/64');
    expect(ipIdentity('1:2:3:4::')).toBe('1:2:3:4:0:0:0:0/64');
  });
});
