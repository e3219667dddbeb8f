import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { client, deploymentBody, makeRepo, startControlPlane, waitForRevision } from './helpers.ts';

/**
 * Issue 28, "Why 8": on the memory store the build folders in BUILD_WORK_DIR (default /tmp/gateway-builds) were never
 * removed, though the deployments they belong to end with the process. Now a stopping control plane on the memory
 * store removes its deployments' folders, and only those: another gateway on the host may share BUILD_WORK_DIR.
 */

const workDir = mkdtempSync(join(tmpdir(), 'memory-build-folders-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe('build folders on the memory store', () => {
  it('are removed when the control plane stops; a folder not its own stays', async () => {
    const repo = makeRepo();
    const other = join(workDir, 'us', 'another-gateways-deployment');
    const cp = await startControlPlane({ BUILD_WORK_DIR: workDir, BUILD_DELAY_SECONDS: '0' });
    try {
      const tenant = await cp.tenant();
      const api = client(cp.url, tenant);
      const d = (await api.post('/deployments', deploymentBody(repo.url))).json;
      expect((await waitForRevision(api, d.id, d.latest_revision_id)).status).toBe('DEPLOYED');
      const folder = cp.cp.builds.folderOf(d.id);
      expect(readdirSync(folder)).toEqual([d.latest_revision_id]);
      mkdirSync(other, { recursive: true });
      await cp.close();
      expect(existsSync(folder)).toBe(false);
      expect(existsSync(other)).toBe(true);
    } finally {
      await cp.close().catch(() => {});
      repo.remove();
    }
  });
});
