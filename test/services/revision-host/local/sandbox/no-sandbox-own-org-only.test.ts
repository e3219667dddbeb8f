import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LocalProcessHost } from '../../../../../src/services/revision-host/local/local-process-host.ts';

/** Without a sandbox, the host runs only the gateway's own organisation's deployments unless every tenant is trusted. */
const spec = (org: string | null) => ({
  deploymentId: 'd',
  revisionId: 'r',
  appDir: '/nonexistent',
  configPath: 'langgraph.json',
  org,
  env: {},
  memoryMb: 64,
  dataPrefix: 'x',
});

describe('SANDBOX=off', () => {
  it("refuses another organisation's revision, saying why", async () => {
    const host = new LocalProcessHost({
      log: pino({ level: 'silent' }),
      redis: null,
      verifyKey: async () => null,
      loadTimeoutMs: 1000,
      sandbox: 'off',
    });
    expect(host.sandbox).toBe('off');
    await expect(host.start(spec('org-other'))).rejects.toThrow(/no sandbox.*TRUST_ALL_TENANTS=1/);
    await expect(host.start(spec(null))).rejects.toThrow(/TRUST_ALL_TENANTS/);
    await host.close();
  });
});
