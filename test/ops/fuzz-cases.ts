/**
 * Malformed (and a few well-formed) HTTP/1.1 requests for the edge fuzz test,
 * drawn from a seeded PRNG so a failing run can be replayed with its seed.
 * Each case is the exact bytes to write, whether to half-close the socket
 * afterwards (a body that never completes), and, where the edge's answer is
 * fixed by the design, the statuses it may give (0 = the connection closed
 * without an answer, which a reset can cause when the edge refuses a request
 * while its body is still arriving).
 */

import {
  BAD_PATHS,
  BASE,
  int,
  INVALID_METHODS,
  json,
  ODD_PATHS,
  PATHS,
  pick,
  request,
  token,
  VALID_METHODS,
  type Rng,
} from './fuzz-vocabulary.ts';

export interface FuzzCase {
  readonly kind: string;
  readonly parts: readonly (string | Buffer)[];
  readonly halfClose: boolean;
  readonly want?: readonly number[];
}

/** The edge's MAX_BODY in the fuzz test. */
export const MAX_BODY = 4096;

export function fuzzCase(rng: Rng): FuzzCase {
  const r = rng();
  const path = () => pick(rng, PATHS);
  const key = () => `key-${token(rng, 6)}`;

  if (r < 0.1) {
    // Well-formed: shows the fuzz runs through the forwarding path too.
    const m = pick(rng, VALID_METHODS);
    const body = m === 'POST' || m === 'PUT' || m === 'PATCH' ? '{"ok":true}' : '';
    const headers = [
      ...BASE,
      ['x-api-key', key()] as const,
      ...(body
        ? [['Content-Type', 'application/json'] as const, ['Content-Length', String(body.length)] as const]
        : []),
    ];
    return { kind: 'valid', parts: [request(m, path(), headers, body)], halfClose: false, want: [200] };
  }
  if (r < 0.18) {
    return {
      kind: 'invalid-method',
      parts: [request(pick(rng, INVALID_METHODS), path(), BASE)],
      halfClose: false,
      want: [400],
    };
  }
  if (r < 0.22) {
    // Random tokens: some may be methods Node knows (PURGE, MKCOL, ...); nothing more is promised than "not a 5xx".
    return { kind: 'random-method', parts: [request(token(rng, int(rng, 1, 12)), path(), BASE)], halfClose: false };
  }
  if (r < 0.34) {
    return {
      kind: 'odd-path',
      parts: [request(pick(rng, VALID_METHODS.slice(0, 2)), pick(rng, ODD_PATHS), [...BASE, ['x-api-key', key()]])],
      halfClose: false,
    };
  }
  if (r < 0.42) {
    return { kind: 'bad-path', parts: [request('GET', pick(rng, BAD_PATHS), BASE)], halfClose: false, want: [400] };
  }
  if (r < 0.45) {
    const raw = pick(rng, ['/a b', '/a\tb', '/a\x00b', '/a\x7fb', '/\x01', '/a\rb']);
    return { kind: 'control-char-path', parts: [request('GET', raw, BASE)], halfClose: false, want: [400] };
  }
  if (r < 0.48) {
    const size = pick(rng, [20_000, 100_000]);
    return {
      kind: 'overlong-path',
      parts: [request('GET', '/' + 'a'.repeat(size), BASE)],
      halfClose: false,
      want: [431, 0],
    };
  }
  if (r < 0.51) {
    const size = pick(rng, [20_000, 64_000]);
    return {
      kind: 'overlong-header',
      parts: [request('GET', path(), [...BASE, ['X-Junk', 'v'.repeat(size)]])],
      halfClose: false,
      want: [431, 0],
    };
  }
  if (r < 0.53) {
    const many = Array.from({ length: int(rng, 100, 400) }, (_, i) => [`X-H${i}`, token(rng, 8)] as const);
    return { kind: 'many-headers', parts: [request('GET', path(), [...BASE, ...many])], halfClose: false };
  }
  if (r < 0.58) {
    const bad = pick(rng, [
      'x bad: v',
      'x@y: v',
      '(x): v',
      'novalue',
      'x-api-key : k',
      ': empty-name',
      'x-a: b\x00c',
      'x-a: b\rc',
      'x-a: b\r\n folded',
    ]);
    const head = `GET ${path()} HTTP/1.1\r\nHost: edge.fuzz\r\nConnection: close\r\n${bad}\r\n\r\n`;
    return { kind: 'bad-header', parts: [head], halfClose: false };
  }
  if (r < 0.68) {
    // Duplicate and conflicting identity headers: which one would count? Refused.
    const name = pick(rng, ['x-api-key', 'x-user-id']);
    const variants: readonly (readonly [string, string])[][] = [
      [
        [name, 'same'],
        [name, 'same'],
      ],
      [
        [name, 'one'],
        [name.toUpperCase(), 'two'],
      ],
      [
        [name, ''],
        [name, 'not-empty'],
      ],
      [
        [name, 'a'],
        ['X-Other', 'b'],
        [name, 'c'],
      ],
      [
        [name, key()],
        [name, key()],
        [name, key()],
      ],
    ];
    return {
      kind: 'repeated-identity',
      parts: [request('GET', `/keyed/${token(rng, 4)}`, [...BASE, ...pick(rng, variants)])],
      halfClose: false,
      want: [400],
    };
  }
  if (r < 0.71) {
    // One header, odd values: one identity, allowed (a comma inside one value is not a repeat).
    const v = pick(rng, ['a, b', ' padded ', 'k'.repeat(3000), '\u00e9\u00e8', '"quoted"', ',']);
    return {
      kind: 'odd-identity',
      parts: [request('GET', '/keyed/x', [...BASE, ['x-api-key', v], ['x-user-id', v]])],
      halfClose: false,
    };
  }
  if (r < 0.77) {
    const body = json(rng);
    const headers = [
      ...BASE,
      ['Content-Type', 'application/json'] as const,
      ['Content-Length', String(Buffer.byteLength(body))] as const,
      ['x-api-key', key()] as const,
    ];
    return {
      kind: 'invalid-json',
      parts: [request('POST', pick(rng, ['/keyed/runs', '/v2/deployments', '/runs/query', '/threads']), headers, body)],
      halfClose: false,
      want: [200],
    };
  }
  if (r < 0.8) {
    const bad = pick(rng, [
      [
        ['Content-Length', '5'],
        ['Transfer-Encoding', 'chunked'],
      ],
      [
        ['Content-Length', '5'],
        ['Content-Length', '6'],
      ],
      [['Content-Length', '-1']],
      [['Content-Length', 'abc']],
      [['Content-Length', '1e3']],
      [['Transfer-Encoding', 'chunked, identity']],
    ] as const);
    return {
      kind: 'conflicting-length',
      parts: [request('POST', '/keyed/runs', [...BASE, ...bad], 'hello')],
      halfClose: true,
      want: [400, 0],
    };
  }
  if (r < 0.84) {
    const n = pick(rng, [MAX_BODY + 1, MAX_BODY * 2, 100_000]);
    return {
      kind: 'body-over-max (length)',
      parts: [request('POST', '/keyed/runs', [...BASE, ['Content-Length', String(n)]], Buffer.alloc(n, 0x61))],
      halfClose: false,
      want: [413, 0],
    };
  }
  if (r < 0.87) {
    const chunk = Buffer.alloc(1500, 0x62);
    const n = int(rng, 3, 8); // 4500+ bytes: over MAX_BODY
    const body = Buffer.concat([
      ...Array.from({ length: n }, () => Buffer.concat([Buffer.from('5dc\r\n'), chunk, Buffer.from('\r\n')])),
      Buffer.from('0\r\n\r\n'),
    ]);
    return {
      kind: 'body-over-max (chunked)',
      parts: [request('POST', '/keyed/runs', [...BASE, ['Transfer-Encoding', 'chunked']], body)],
      halfClose: false,
      want: [413, 0],
    };
  }
  if (r < 0.88) {
    return {
      kind: 'body-at-max',
      parts: [
        request('POST', '/keyed/runs', [...BASE, ['Content-Length', String(MAX_BODY)]], Buffer.alloc(MAX_BODY, 0x63)),
      ],
      halfClose: false,
      want: [200],
    };
  }
  if (r < 0.93) {
    // Bodies that never complete: the client half-closes mid-body.
    const body = pick(rng, [
      '100\r\nabc',
      '5\r\nhel',
      'zz\r\nhello\r\n0\r\n\r\n',
      '5\r\nhelloXX0\r\n\r\n',
      '5;ext="x\r\nhello\r\n',
      '-5\r\nhello\r\n',
    ]);
    return {
      kind: 'truncated-chunked',
      parts: [request('POST', '/keyed/runs', [...BASE, ['Transfer-Encoding', 'chunked']], body)],
      halfClose: true,
    };
  }
  if (r < 0.95) {
    const declared = int(rng, 10, 1000);
    return {
      kind: 'truncated-length',
      parts: [
        request(
          'POST',
          '/keyed/runs',
          [...BASE, ['Content-Length', String(declared)]],
          'x'.repeat(int(rng, 0, declared - 1)),
        ),
      ],
      halfClose: true,
    };
  }
  if (r < 0.97) {
    const v = pick(rng, [
      // Node's parser takes these as HTTP/1.x requests (the edge forwards them as HTTP/1.1): no fixed answer.
      { line: 'GET / HTTP/2.0', want: undefined },
      { line: 'GET / HTTP/1.2', want: undefined },
      { line: 'GET /', want: undefined },
      { line: 'GET / FTP/1.1', want: [400] },
      { line: 'GARBAGE', want: [400] },
      { line: '\x16\x03\x01\x02\x00\x01', want: [400, 0] },
    ]);
    return {
      kind: 'bad-version',
      parts: [`${v.line}\r\nHost: edge.fuzz\r\nConnection: close\r\n\r\n`],
      halfClose: false,
      ...(v.want ? { want: v.want } : {}),
    };
  }
  if (r < 0.98) {
    return {
      kind: 'no-host',
      parts: [`GET ${path()} HTTP/1.1\r\nConnection: close\r\n\r\n`],
      halfClose: false,
      want: [400],
    };
  }
  // Random bytes.
  const bytes = Buffer.from(Array.from({ length: int(rng, 1, 200) }, () => int(rng, 0, 255)));
  return { kind: 'random-bytes', parts: [bytes, '\r\n\r\n'], halfClose: true };
}
