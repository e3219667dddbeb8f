import { totalmem } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadControlPlaneSettings } from '../../src/services/control-plane/settings.ts';
import { memoryOf } from '../../src/services/control-plane/resource-spec.ts';
import {
  client,
  deploymentBody,
  imageBody,
  startControlPlane,
  type TestControlPlane,
} from '../services/control-plane/helpers.ts';

/**
 * Finding "a tenant picks its own memory cap" (issue 34, attack 11): `resource_spec.memory_mb: 65536` made a 64 GiB
 * cgroup on a 23 GiB host, and the revision held 2 GiB. Now MAX_MEMORY_MB (default a quarter of the host's memory)
 * bounds it: a create or patch over it answers 422 with one line naming the maximum, and a record written before the
 * bound starts with no more than it.
 */
const MAX = 1024;
let t: TestControlPlane;
beforeAll(async () => {
  t = await startControlPlane({ MAX_MEMORY_MB: String(MAX) });
});
afterAll(() => t?.close());

const over = { resource_spec: { memory_mb: 65_536 } };

describe('memory_mb beyond the host', () => {
  it('a create over MAX_MEMORY_MB answers 422 naming the maximum', async () => {
    const api = client(t.url, await t.tenant());
    const body = deploymentBody('https://example.com/r.git');
    const res = await api.post('/deployments', { ...body, source_config: { ...body.source_config, ...over } });
    expect(res.status).toBe(422);
    expect(res.json.detail).toEqual([
      {
        loc: ['body', 'source_config', 'resource_spec', 'memory_mb'],
        msg: `must be a whole number of MiB from 64 to ${MAX} (MAX_MEMORY_MB, this gateway's maximum)`,
        type: 'value_error',
      },
    ]);
  });

  it('a patch over it too; at the maximum it is accepted', async () => {
    const api = client(t.url, await t.tenant());
    const d = (await api.post('/deployments', imageBody())).json;
    const res = await api.patch(`/deployments/${d.id}`, { source_config: over });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.json.detail)).toContain(`to ${MAX} (MAX_MEMORY_MB`);
    const ok = await api.patch(`/deployments/${d.id}`, { source_config: { resource_spec: { memory_mb: MAX } } });
    expect(ok.status).toBe(200);
  });

  it('by default the maximum is a quarter of this host, never more than it has', () => {
    const { maxMemoryMb } = loadControlPlaneSettings({});
    expect(maxMemoryMb).toBe(Math.floor(totalmem() / 4 / 1024 / 1024));
  });

  it('a record written before the bound starts with no more than the maximum', () => {
    expect(memoryOf({ memory_mb: 65_536 }, 512, MAX)).toBe(MAX);
    expect(memoryOf({ memory_mb: 96 }, 512, MAX)).toBe(96);
    expect(memoryOf(null, 512, MAX)).toBe(512);
  });
});
