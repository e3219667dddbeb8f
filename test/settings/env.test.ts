import { describe, expect, it } from 'vitest';
import {
  bytes,
  duration,
  integer,
  list,
  matching,
  oneOf,
  optionalUrl,
  port,
  renamed,
  seconds,
  SettingsError,
  text,
} from '../../src/settings/env.ts';
import { loadKeyRegistrySettings } from '../../src/settings/key-registry.ts';

const fails = (read: () => unknown, message: string) => {
  let caught: unknown;
  try {
    read();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(SettingsError);
  expect((caught as SettingsError).message).toBe(message);
};

describe('settings toolkit', () => {
  it('an unset or blank variable takes the default; values are trimmed', () => {
    expect(text({}, 'A', 'd')).toBe('d');
    expect(text({ A: '  ' }, 'A', 'd')).toBe('d');
    expect(text({ A: ' x ' }, 'A', 'd')).toBe('x');
    expect(list({ A: ' a, ,b ' }, 'A')).toEqual(['a', 'b']);
    expect(integer({}, 'N', 3, 1, 5)).toBe(3);
    expect(port({ P: '80' }, 'P', 1)).toBe(80);
    expect(seconds({ S: '0.5' }, 'S', 1, 0, 10)).toBe(0.5);
    expect(oneOf({ M: 'ON' }, 'M', ['on', 'off'] as const, 'off')).toBe('on');
    expect(optionalUrl({}, 'U', ['http:'])).toBeNull();
    expect(optionalUrl({ U: 'http://h/{id}' }, 'U', ['http:'], { placeholder: '{id}' })).toBe('http://h/{id}');
    expect(duration({ D: '2m' }, 'D', 1)).toBe(120_000);
    expect(bytes({ B: '2KiB' }, 'B', 1)).toBe(2048);
  });

  it('an invalid value is a SettingsError naming the variable', () => {
    fails(() => integer({ N: '9' }, 'N', 3, 1, 5), 'N: must be a whole number 1-5, got "9"');
    fails(() => port({ P: '70000' }, 'P', 1), 'P: must be a port number 0-65535, got "70000"');
    fails(() => seconds({ S: 'x' }, 'S', 1, 0.05, 300), 'S: must be a number of seconds 0.05-300, got "x"');
    fails(() => oneOf({ M: 'maybe' }, 'M', ['on', 'off'] as const, 'off'), 'M: must be one of on, off, got "maybe"');
    fails(() => matching({ K: 'a b' }, 'K', /^\w+$/, 'k', 'a word'), 'K: must be a word, got "a b"');
    fails(
      () => optionalUrl({ U: 'ftp://h' }, 'U', ['http:', 'https:']),
      'U: must be a http:// or https:// URL, got "ftp://h"',
    );
    fails(() => duration({ D: 'soon' }, 'D', 1), 'D: must be a duration such as 30s, 500ms or 2m, got "soon"');
    fails(() => bytes({ B: 'big' }, 'B', 1), 'B: must be a size such as 10MiB or 1048576, got "big"');
  });

  it('a renamed variable: the new name wins; the old one still works, with a warning naming the one to use', () => {
    expect(renamed({}, 'NEW', 'OLD')).toEqual({ variable: 'NEW', warning: null });
    expect(renamed({ NEW: 'x' }, 'NEW', 'OLD')).toEqual({ variable: 'NEW', warning: null });
    expect(renamed({ OLD: 'x' }, 'NEW', 'OLD')).toEqual({
      variable: 'OLD',
      warning: 'OLD is deprecated: use NEW instead',
    });
    expect(renamed({ NEW: 'x', OLD: 'y' }, 'NEW', 'OLD')).toEqual({
      variable: 'NEW',
      warning: 'OLD is deprecated and ignored (NEW is set): remove it',
    });
  });
});

describe('key registry settings', () => {
  it('API_KEYS_PREFIX (default "keys"); the old KEYS_PREFIX with its warning', () => {
    expect(loadKeyRegistrySettings({})).toEqual({ redisUrl: null, prefix: 'keys', warning: null });
    expect(loadKeyRegistrySettings({ REDIS_URL: 'redis://r:6379', API_KEYS_PREFIX: 'k2' })).toEqual({
      redisUrl: 'redis://r:6379',
      prefix: 'k2',
      warning: null,
    });
    expect(loadKeyRegistrySettings({ KEYS_PREFIX: 'k1' })).toEqual({
      redisUrl: null,
      prefix: 'k1',
      warning: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead',
    });
    fails(
      () => loadKeyRegistrySettings({ REDIS_URL: 'http://x' }),
      'REDIS_URL: must be a redis:// or rediss:// URL, got "http://x"',
    );
  });
});
