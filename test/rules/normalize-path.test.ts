import { describe, expect, it } from 'vitest';
import { InvalidPathError, normalizePath } from '../../src/rules/normalize-path.ts';

describe('normalizePath', () => {
  it.each([
    // query and fragment are cut before anything else
    ['/runs/query?limit=10', '/runs/query'],
    ['/runs/query#frag', '/runs/query'],
    ['/a#f?not-a-query', '/a'],
    ['/a?x=/../b', '/a'],
    ['/a/../b?x', '/b'],
    // unreserved characters are decoded (RFC 3986 §6.2.2.2), either hex case
    ['/runs/%2e%2e/runs/query', '/runs/query'],
    ['/%41%62%7E%5f%2D%30', '/Ab~_-0'],
    ['/a/%2E', '/a/'],
    // everything else stays encoded with upper-case hex (§6.2.2.1): data, not separators
    ['/a%2fb', '/a%2Fb'],
    ['/a/..%2fb', '/a/..%2Fb'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a%3Fb', '/a%3Fb'],
    // no double decoding: %25 is a literal percent sign
    ['/a%252e', '/a%252e'],
    ['/%252e%252e/x', '/%252e%252e/x'],
    // backslash is a slash, as WHATWG URL parsers treat it
    ['/a\\b', '/a/b'],
    ['/a\\..\\b', '/b'],
    ['/\\evil.example', '/evil.example'],
    // runs of slashes collapse
    ['//runs//query', '/runs/query'],
    ['//', '/'],
    ['/a///', '/a/'],
    // dot segments (RFC 3986 §5.2.4); `..` never climbs above the root
    ['/a/./b', '/a/b'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/a/..', '/'],
    ['/..', '/'],
    ['/.', '/'],
    ['/../../a', '/a'],
    ['/foo/../runs/query', '/runs/query'],
    ['/a/b/c/./../../g', '/a/g'], // §5.2.4's own example
  ])('%s → %s', (target, normal) => {
    expect(normalizePath(target)).toBe(normal);
  });

  // RFC 3986 §5.4.1/§5.4.2 reference resolutions against base /b/c/d;p, written
  // as the merged absolute paths that remove_dot_segments receives.
  it.each([
    ['/b/c/./g', '/b/c/g'],
    ['/b/c/g/', '/b/c/g/'],
    ['/b/c/.', '/b/c/'],
    ['/b/c/./', '/b/c/'],
    ['/b/c/..', '/b/'],
    ['/b/c/../', '/b/'],
    ['/b/c/../g', '/b/g'],
    ['/b/c/../..', '/'],
    ['/b/c/../../', '/'],
    ['/b/c/../../g', '/g'],
    ['/b/c/../../../g', '/g'],
    ['/b/c/../../../../g', '/g'],
    ['/./g', '/g'],
    ['/../g', '/g'],
    ['/b/c/g.', '/b/c/g.'],
    ['/b/c/.g', '/b/c/.g'],
    ['/b/c/g..', '/b/c/g..'],
    ['/b/c/..g', '/b/c/..g'],
    ['/b/c/./../g', '/b/g'],
    ['/b/c/./g/.', '/b/c/g/'],
    ['/b/c/g/./h', '/b/c/g/h'],
    ['/b/c/g/../h', '/b/c/h'],
    ['/b/c/g;x=1/./y', '/b/c/g;x=1/y'],
    ['/b/c/g;x=1/../y', '/b/c/y'],
  ])('RFC 3986 §5.4: %s → %s', (merged, normal) => {
    expect(normalizePath(merged)).toBe(normal);
  });

  it.each(['/', '/runs/query', '/runs/query/', '/.well-known/x', '/a/.../b', '/a/..b/c.', '/caf%C3%A9', '/é'])(
    'returns a path that is already normal unchanged: %s',
    (path) => {
      expect(normalizePath(path)).toBe(path);
    },
  );

  it.each([
    ['/a%zz', 2],
    ['/a%4', 2],
    ['/a%', 2],
    ['/%4g/b', 1],
    ['/ok/%g4', 4],
  ])('rejects the invalid escape in %s (offset %i)', (target, offset) => {
    expect(() => normalizePath(target)).toThrow(InvalidPathError);
    expect(() => normalizePath(target)).toThrow(`invalid percent-encoding at offset ${offset}`);
  });

  it('ignores an invalid escape in the query, which it cuts first', () => {
    expect(normalizePath('/a?q=%zz')).toBe('/a');
  });

  it.each(['', 'runs/query', '?x=1', '#top', '*', 'http://host/a', '\\a'])(
    'rejects %j: not an origin-form path',
    (target) => {
      let err: unknown;
      try {
        normalizePath(target);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidPathError);
      expect(err).toMatchObject({ code: 'invalid_path', message: 'request path must start with "/"' });
    },
  );

  it('is idempotent, and its output has no escape, slash run or dot segment left to normalise (10,000 random paths)', () => {
    // Small alphabet so that dots, escapes and slashes collide often; seeded, so a failure reproduces.
    const alphabet = ['/', '/', '.', '.', '%', '2', 'e', 'E', 'f', 'F', '4', '1', 'a', 'z', '\\', '~'];
    let seed = 0x9e3779b9;
    const next = () => {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    let checked = 0;
    for (let n = 0; n < 10_000; n++) {
      let target = '/';
      const len = Math.floor(next() * 14);
      for (let i = 0; i < len; i++) target += alphabet[Math.floor(next() * alphabet.length)];
      let normal: string;
      try {
        normal = normalizePath(target);
      } catch (err) {
        expect(err, target).toBeInstanceOf(InvalidPathError);
        continue;
      }
      checked++;
      expect(normalizePath(normal), target).toBe(normal);
      expect(normal, target).toMatch(/^\//);
      expect(normal, target).not.toMatch(/\/\/|\\|\/\.\.?(\/|$)|%(?![0-9A-F]{2})/);
      const escaped = [...normal.matchAll(/%([0-9A-F]{2})/g)].map((m) => String.fromCharCode(parseInt(m[1]!, 16)));
      expect(
        escaped.filter((c) => /[A-Za-z0-9\-._~]/.test(c)),
        target,
      ).toEqual([]);
    }
    expect(checked).toBeGreaterThan(3_000);
  });
});
