/**
 * The key registry: organisations own workspaces, API keys belong to an
 * organisation. Only a hash of each key is stored; the key itself exists
 * once, in the answer to `createKey`. Shared by the control plane (which
 * checks `X-Api-Key` and `X-Tenant-Id`) and the edge (KEY_CHECK).
 */

export interface ApiKeyRecord {
  /** A public handle of the key for logs and audits (never the key or its hash). */
  readonly id: string;
  readonly org: string;
  readonly createdAt: string;
}

export interface CreatedKey {
  /** The API key itself: shown once, never stored. */
  readonly key: string;
  readonly record: ApiKeyRecord;
}

export interface KeyRegistry {
  readonly kind: 'memory' | 'redis';
  /**
   * Gives `workspace` to `org` (a no-op when it already has it). Throws `workspace_taken` when another organisation
   * owns it.
   */
  addWorkspace(org: string, workspace: string): Promise<void>;
  /** The organisation owning `workspace`, or null when none does. */
  workspaceOrg(workspace: string): Promise<string | null>;
  /** The workspaces of `org`, sorted. */
  workspaces(org: string): Promise<string[]>;
  /** A new key of `org`; only its hash is kept. */
  createKey(org: string): Promise<CreatedKey>;
  /** The record of a key, or null when the key is unknown (or malformed). */
  findKey(key: string): Promise<ApiKeyRecord | null>;
  /** Every key's record (of `org` only, when given), oldest first: ids, never a key or its hash. */
  listKeys(org?: string): Promise<ApiKeyRecord[]>;
  /** Removes the key with this id: its record, or null when no key has it. */
  revokeKey(id: string): Promise<ApiKeyRecord | null>;
  /**
   * Claims the one-time development bootstrap: true for exactly one caller,
   * and only while the registry holds no key at all (several processes on
   * one Redis race for it; one wins).
   */
  claimBootstrap(): Promise<boolean>;
  close(): Promise<void>;
}

export class KeyRegistryError extends Error {
  constructor(
    readonly code: 'invalid_name' | 'workspace_taken',
    message: string,
  ) {
    super(message);
    this.name = 'KeyRegistryError';
  }
}
