import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureDevelopmentKey } from '../../src/keys/bootstrap.ts';
import { KeyRegistryError, type KeyRegistry } from '../../src/keys/types.ts';

/** The KeyRegistry contract, run by the memory and the Redis registry. */
export interface RegistryHarness {
  readonly registry: KeyRegistry;
  /** A second registry on the same storage (another process), when the backend has one. */
  readonly peer?: KeyRegistry;
  /** Every stored value, raw (for "only hashes are stored"); absent when the backend has no raw view. */
  rawValues?(): Promise<string[]>;
  close(): Promise<void>;
}

export function registryContract(name: string, make: () => Promise<RegistryHarness>): void {
  describe(`KeyRegistry contract: ${name}`, () => {
    let h: RegistryHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    it('a created key is found, with its organisation; an unknown or malformed one is not', async () => {
      const { key, record } = await h.registry.createKey('acme');
      expect(key).toMatch(/^gwk_[A-Za-z0-9_-]{43}$/);
      expect(record.org).toBe('acme');
      expect(await h.registry.findKey(key)).toEqual(record);
      expect(await h.registry.findKey(key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A'))).toBeNull();
      expect(await h.registry.findKey('not-a-key')).toBeNull();
      expect(await h.registry.findKey('')).toBeNull();
    });

    it('lists keys by id and organisation, never a key; a revoked key is no longer found (and across processes)', async () => {
      const a = await h.registry.createKey('acme');
      const b = await h.registry.createKey('globex');
      const all = await h.registry.listKeys();
      expect(all.map((r) => r.id)).toEqual(expect.arrayContaining([a.record.id, b.record.id]));
      expect(JSON.stringify(all)).not.toContain(a.key.slice(4));
      expect((await h.registry.listKeys('globex')).map((r) => r.id)).toEqual([b.record.id]);
      expect(await h.registry.revokeKey(a.record.id)).toEqual(a.record);
      expect(await h.registry.findKey(a.key)).toBeNull();
      if (h.peer) expect(await h.peer.findKey(a.key)).toBeNull();
      expect(await h.registry.revokeKey(a.record.id)).toBeNull();
      expect(await h.registry.revokeKey('key_nope')).toBeNull();
      expect((await h.registry.findKey(b.key))?.id).toBe(b.record.id);
    });

    it('two keys are distinct and both valid', async () => {
      const a = await h.registry.createKey('acme');
      const b = await h.registry.createKey('acme');
      expect(a.key).not.toBe(b.key);
      expect(a.record.id).not.toBe(b.record.id);
      expect((await h.registry.findKey(b.key))?.id).toBe(b.record.id);
    });

    it('stores only a hash of the key', async () => {
      const { key } = await h.registry.createKey('acme');
      if (!h.rawValues) return;
      const raw = (await h.rawValues()).join('\n');
      expect(raw).not.toContain(key);
      expect(raw).not.toContain(key.slice(4)); // nor its random part
      expect(raw).toContain('acme');
      // The SHA-256 of the key is the lookup handle: it is what is stored.
      expect(raw).toContain(createHash('sha256').update(key).digest('hex'));
    });

    it('organisations own workspaces; another organisation cannot take one', async () => {
      await h.registry.addWorkspace('acme', 'ws-1');
      await h.registry.addWorkspace('acme', 'ws-2');
      await h.registry.addWorkspace('acme', 'ws-1'); // again: no-op
      expect(await h.registry.workspaceOrg('ws-1')).toBe('acme');
      expect(await h.registry.workspaces('acme')).toEqual(['ws-1', 'ws-2']);
      const err = await h.registry.addWorkspace('globex', 'ws-1').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KeyRegistryError);
      expect((err as KeyRegistryError).code).toBe('workspace_taken');
      expect(await h.registry.workspaceOrg('ws-1')).toBe('acme');
      expect(await h.registry.workspaceOrg('nope')).toBeNull();
      expect(await h.registry.workspaces('globex')).toEqual([]);
    });

    it('refuses names that could not be ids', async () => {
      for (const bad of ['', ' ', 'a b', '-x', 'x'.repeat(65), 'a/b', 'ä']) {
        await expect(h.registry.addWorkspace('acme', bad)).rejects.toMatchObject({ code: 'invalid_name' });
        await expect(h.registry.createKey(bad)).rejects.toMatchObject({ code: 'invalid_name' });
      }
    });

    it('the development bootstrap happens once, only on an empty registry, and its key works', async () => {
      const dev = await ensureDevelopmentKey(h.registry);
      expect(dev).not.toBeNull();
      expect(dev!.org).toBe('default');
      expect(dev!.workspace).toBe('default');
      expect((await h.registry.findKey(dev!.key))?.org).toBe('default');
      expect(await h.registry.workspaceOrg('default')).toBe('default');
      expect(await ensureDevelopmentKey(h.registry)).toBeNull();
      if (h.peer) expect(await ensureDevelopmentKey(h.peer)).toBeNull();
    });

    it('no development key once the registry holds a key', async () => {
      await h.registry.createKey('acme');
      expect(await ensureDevelopmentKey(h.registry)).toBeNull();
    });

    it('concurrent bootstraps make exactly one key', async () => {
      const both = await Promise.all([
        ensureDevelopmentKey(h.registry),
        ensureDevelopmentKey(h.peer ?? h.registry),
        ensureDevelopmentKey(h.registry),
      ]);
      expect(both.filter((d) => d !== null)).toHaveLength(1);
    });

    it('a peer on the same storage sees keys and workspaces', async () => {
      if (!h.peer) return;
      const { key } = await h.registry.createKey('acme');
      await h.registry.addWorkspace('acme', 'ws-p');
      expect((await h.peer.findKey(key))?.org).toBe('acme');
      expect(await h.peer.workspaceOrg('ws-p')).toBe('acme');
    });
  });
}
