import { checkName, generateKey, keyHash, newKeyId } from './key-format.ts';
import { KeyRegistryError, type ApiKeyRecord, type CreatedKey, type KeyRegistry } from './types.ts';

/** The registry of one process (the embedded default): lost on restart, like the memory stores. */
export class MemoryKeyRegistry implements KeyRegistry {
  readonly kind = 'memory';
  private readonly byHash = new Map<string, ApiKeyRecord>();
  private readonly workspaceOwner = new Map<string, string>();
  private bootstrapped = false;

  async addWorkspace(org: string, workspace: string): Promise<void> {
    checkName('organisation', org);
    checkName('workspace', workspace);
    const owner = this.workspaceOwner.get(workspace);
    if (owner !== undefined && owner !== org) throw workspaceTaken(workspace);
    this.workspaceOwner.set(workspace, org);
  }

  async workspaceOrg(workspace: string): Promise<string | null> {
    return this.workspaceOwner.get(workspace) ?? null;
  }

  async workspaces(org: string): Promise<string[]> {
    return [...this.workspaceOwner]
      .filter(([, o]) => o === org)
      .map(([w]) => w)
      .sort();
  }

  async createKey(org: string): Promise<CreatedKey> {
    checkName('organisation', org);
    const key = generateKey();
    const record: ApiKeyRecord = { id: newKeyId(), org, createdAt: new Date().toISOString() };
    this.byHash.set(keyHash(key)!, record);
    return { key, record };
  }

  async findKey(key: string): Promise<ApiKeyRecord | null> {
    const hash = keyHash(key);
    return hash === null ? null : (this.byHash.get(hash) ?? null);
  }

  async listKeys(org?: string): Promise<ApiKeyRecord[]> {
    return byAge([...this.byHash.values()].filter((r) => org === undefined || r.org === org));
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    for (const [hash, record] of this.byHash) {
      if (record.id !== id) continue;
      this.byHash.delete(hash);
      return record;
    }
    return null;
  }

  async claimBootstrap(): Promise<boolean> {
    if (this.bootstrapped || this.byHash.size > 0) return false;
    this.bootstrapped = true;
    return true;
  }

  async close(): Promise<void> {}
}

export function workspaceTaken(workspace: string): KeyRegistryError {
  return new KeyRegistryError('workspace_taken', `workspace "${workspace}" belongs to another organisation`);
}

/** Oldest first (creation time, then id). */
export function byAge(records: ApiKeyRecord[]): ApiKeyRecord[] {
  return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}
