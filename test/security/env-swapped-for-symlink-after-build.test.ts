import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RevisionHost, RevisionSpec, RunningRevision } from '../../src/services/revision-host/revision-host.ts';
import { launchRevision } from '../../src/services/control-plane/serving/revision-launch.ts';
import type { ServingOptions } from '../../src/services/control-plane/serving/serving.ts';
import type { StoredDeployment, StoredRevision } from '../../src/services/control-plane/types.ts';

// The build checks that `.env` resolves inside the checkout, but a running app can write its own build folder: it
// replaced `.env` with a link to a host file, and the next start of its revision read that file into its environment.
// Now the build reads the env once into the revision's record and a start takes it from there (issue 34); a revision
// built before that (no `app_env` in its record) is still read from the folder, bounded and never through a link out.
describe('a .env swapped for a symlink after the build', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  async function startedEnv(
    folderFiles: (folder: string, outside: string) => Promise<void>,
    built?: Record<string, string>,
  ) {
    const folder = await mkdtemp(join(tmpdir(), 'env-swap-'));
    const outside = await mkdtemp(join(tmpdir(), 'env-host-'));
    dirs.push(folder, outside);
    await writeFile(join(outside, 'host-secret'), 'GATEWAY_SECRET=from-the-host\n');
    await folderFiles(folder, outside);
    let seen: RevisionSpec | null = null;
    const host: RevisionHost = {
      kind: 'recording',
      start: (spec: RevisionSpec) => {
        seen = spec;
        return Promise.resolve({} as RunningRevision);
      },
      close: () => Promise.resolve(),
    };
    const options = {
      host,
      keys: { workspaceOrg: () => Promise.resolve(null) },
      folderOf: () => folder,
      memoryMb: 256,
      dataPrefix: 'test',
    } as unknown as ServingOptions;
    const deployment = { id: 'd1', tenant_id: 't1', secrets: [], source_config: {} } as unknown as StoredDeployment;
    const revision = { id: 'r1', source_revision_config: {}, app_env: built } as unknown as StoredRevision;
    await launchRevision(options, deployment, revision);
    return (seen as RevisionSpec | null)?.env ?? {};
  }

  it('starts with the env its build kept, whatever the folder holds now', async () => {
    const env = await startedEnv(
      async (folder, outside) => {
        await writeFile(join(folder, 'langgraph.json'), JSON.stringify({ env: '.env' }));
        await symlink(join(outside, 'host-secret'), join(folder, '.env'));
      },
      { OWN: 'built' },
    );
    expect(env).toEqual({ OWN: 'built' });
  });

  it('built before the env was kept: reads a .env inside the folder', async () => {
    const env = await startedEnv(async (folder) => {
      await writeFile(join(folder, 'langgraph.json'), JSON.stringify({ env: '.env' }));
      await writeFile(join(folder, '.env'), 'OWN=yes\n');
    });
    expect(env).toEqual({ OWN: 'yes' });
  });

  it('built before the env was kept: does not follow a .env symlink out of the folder', async () => {
    const env = await startedEnv(async (folder, outside) => {
      await writeFile(join(folder, 'langgraph.json'), JSON.stringify({ env: '.env' }));
      await symlink(join(outside, 'host-secret'), join(folder, '.env'));
    });
    expect(env).toEqual({});
  });

  it('built before the env was kept: does not follow a langgraph.json symlink out of the folder', async () => {
    const env = await startedEnv(async (folder, outside) => {
      await mkdir(join(outside, 'cfg'));
      await writeFile(join(outside, 'cfg', 'langgraph.json'), JSON.stringify({ env: { STOLEN: 'x' } }));
      await symlink(join(outside, 'cfg', 'langgraph.json'), join(folder, 'langgraph.json'));
    });
    expect(env).toEqual({});
  });
});
