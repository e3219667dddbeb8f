import { describe, expect, it } from 'vitest';
import { loadAgentServerSettings } from '../../src/services/agent-server/settings.ts';
import { DEFAULT_AGENT_QUOTAS } from '../../src/services/agent-server/quotas.ts';
import { loadControlPlaneSettings } from '../../src/services/control-plane/settings.ts';

describe('quota settings', () => {
  it('have safe defaults', () => {
    expect(loadControlPlaneSettings({}).maxDeploymentsPerTenant).toBe(20);
    expect(loadAgentServerSettings({}).quotas).toEqual({
      maxCrons: 100,
      maxCronsPerUser: 10,
      minCronIntervalSeconds: 60,
      maxStoreItems: 100_000,
      maxStoreBytes: 1024 ** 3,
      maxStoreItemsPerUser: 10_000,
      maxStoreBytesPerUser: 100 * 1024 ** 2,
      maxStoreValueBytes: 1024 ** 2,
    });
    expect(loadAgentServerSettings({}).quotas).toEqual(DEFAULT_AGENT_QUOTAS);
  });

  it('are read from the environment (sizes with units)', () => {
    expect(loadControlPlaneSettings({ MAX_DEPLOYMENTS_PER_TENANT: '3' }).maxDeploymentsPerTenant).toBe(3);
    const q = loadAgentServerSettings({
      MAX_CRONS: '5',
      MAX_CRONS_PER_USER: '2',
      MIN_CRON_INTERVAL_SECONDS: '300',
      MAX_STORE_ITEMS: '1000',
      MAX_STORE_BYTES: '2GiB',
      MAX_STORE_ITEMS_PER_USER: '10',
      MAX_STORE_BYTES_PER_USER: '512KiB',
      MAX_STORE_VALUE_BYTES: '64KiB',
    }).quotas;
    expect(q).toEqual({
      maxCrons: 5,
      maxCronsPerUser: 2,
      minCronIntervalSeconds: 300,
      maxStoreItems: 1000,
      maxStoreBytes: 2 * 1024 ** 3,
      maxStoreItemsPerUser: 10,
      maxStoreBytesPerUser: 512 * 1024,
      maxStoreValueBytes: 64 * 1024,
    });
  });

  it('an invalid value fails naming the variable', () => {
    expect(() => loadControlPlaneSettings({ MAX_DEPLOYMENTS_PER_TENANT: '0' })).toThrow(
      /^MAX_DEPLOYMENTS_PER_TENANT: /,
    );
    expect(() => loadAgentServerSettings({ MIN_CRON_INTERVAL_SECONDS: 'often' })).toThrow(
      /^MIN_CRON_INTERVAL_SECONDS: /,
    );
    expect(() => loadAgentServerSettings({ MAX_STORE_BYTES: 'lots' })).toThrow(/^MAX_STORE_BYTES: /);
  });
});
