import { describe, expect, it, vi } from 'vitest';
import { authorizer, matchesFilter } from '../../../../src/services/agent-server/auth/filters.ts';
import { ApiError } from '../../../../src/services/agent-server/errors.ts';
import type { AuthUser } from '../../../../src/services/agent-server/auth/user.ts';

const user: AuthUser = { identity: 'alice', display_name: 'Alice', is_authenticated: true, permissions: ['p1'] };

describe('authorization handler lookup', () => {
  it('takes resource:action, then resource, then *:action, then *', async () => {
    const calls: string[] = [];
    const handler = (name: string) => () => void calls.push(name);
    const all = {
      'threads:create': handler('threads:create'),
      threads: handler('threads'),
      '*:create': handler('*:create'),
      '*': handler('*'),
    };
    await authorizer(all, user)('threads', 'create', {});
    await authorizer({ ...all, 'threads:create': undefined! }, user)('threads', 'create', {});
    await authorizer({ '*:create': all['*:create'], '*': all['*'] }, user)('threads', 'create', {});
    await authorizer({ '*': all['*'] }, user)('threads', 'create', {});
    expect(calls).toEqual(['threads:create', 'threads', '*:create', '*']);
  });

  it('passes event, resource, action, value, user and permissions; the handler may change value.metadata', async () => {
    const seen = vi.fn((args: { value: Record<string, unknown> }) => {
      args.value.metadata = { owner: 'alice' };
    });
    const value: Record<string, unknown> = { thread_id: 't' };
    await authorizer({ threads: seen }, user)('threads', 'create', value);
    expect(seen).toHaveBeenCalledWith(
      expect.objectContaining({
        event: 'threads:create',
        resource: 'threads',
        action: 'create',
        user,
        permissions: ['p1'],
      }),
    );
    expect(value.metadata).toEqual({ owner: 'alice' });
  });

  it('reads nothing, true and {} as "allow without filter", false as 403, an object as a filter', async () => {
    const run = (result: unknown) => authorizer({ '*': () => result }, user)('threads', 'read', {});
    expect(await run(undefined)).toBeNull();
    expect(await run(true)).toBeNull();
    expect(await run({})).toBeNull();
    expect(await run({ owner: 'alice' })).toEqual({ owner: 'alice' });
    await expect(run(false)).rejects.toMatchObject({ status: 403 });
    await expect(run(42)).rejects.toMatchObject({ status: 500 });
    await expect(run({ owner: { $regex: 'a' } })).rejects.toThrow(/unsupported operator \$regex/);
    await expect(run(false)).rejects.toBeInstanceOf(ApiError);
  });

  it('allows everything when no handler matches', async () => {
    expect(await authorizer({ 'assistants:read': () => false }, user)('threads', 'read', {})).toBeNull();
  });
});

describe('filters', () => {
  const meta = { owner: 'alice', members: ['alice', 'bob'], team: 'red', tags: 'a,b' };
  it.each([
    [{ owner: 'alice' }, true],
    [{ owner: 'bob' }, false],
    [{ owner: { $eq: 'alice' } }, true],
    [{ owner: { $eq: 'bob' } }, false],
    [{ members: { $contains: 'bob' } }, true],
    [{ members: { $contains: 'carol' } }, false],
    [{ members: { $contains: ['alice', 'bob'] } }, true],
    [{ tags: { $contains: 'b' } }, true],
    [{ owner: 'alice', team: 'blue' }, false],
    [{ missing: 'x' }, false],
    [{ members: ['alice', 'bob'] }, true],
  ])('%j on the metadata → %s', (filter, expected) => {
    expect(matchesFilter(meta, filter)).toBe(expected);
  });

  it('lets everything through without a filter, and nothing filtered through without metadata', () => {
    expect(matchesFilter(undefined, null)).toBe(true);
    expect(matchesFilter(undefined, { owner: 'alice' })).toBe(false);
  });

  it("reads only the metadata's own keys: a value it inherits (a `__proto__` key merged in) never passes", () => {
    const inherited = Object.create({ owner: 'alice' }) as Record<string, unknown>;
    expect(matchesFilter(inherited as never, { owner: 'alice' })).toBe(false);
    expect(matchesFilter({}, { toString: { $eq: Object.prototype.toString } })).toBe(false);
  });
});
