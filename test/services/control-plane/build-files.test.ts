import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArtifactStore } from '../../../src/services/control-plane/builds/artifacts.ts';
import { buildKept, pruneBuilds, removeBuild } from '../../../src/services/control-plane/builds/build-files.ts';
import { BuildFailure } from '../../../src/services/control-plane/builds/builder.ts';
import type { StoredRevision } from '../../../src/services/control-plane/types.ts';

/**
 * Whether a build is still there is asked in one place, in the terms of the host that would run it: its folder for
 * the local host, its artifact for a host that runs revisions from artifacts (a pod). Removal and KEEP_BUILDS take
 * both. Real folders and archives in a temporary directory.
 */

let work: string;
afterEach(() => rmSync(work, { recursive: true, force: true }));

function setup() {
  work = mkdtempSync(join(tmpdir(), 'build-files-'));
  const folderOf = (d: string, r: string) => join(work, 'builds', d, r);
  const artifacts = new ArtifactStore(join(work, 'artifacts'), 1 << 20);
  const build = async (d: string, r: string, content = r) => {
    mkdirSync(folderOf(d, r), { recursive: true });
    writeFileSync(join(folderOf(d, r), 'graph.ts'), content);
    const artifact = await artifacts.pack(folderOf(d, r));
    return { deployment_id: d, id: r, artifact } as Pick<StoredRevision, 'deployment_id' | 'id' | 'artifact'>;
  };
  return { places: { folderOf, artifacts }, artifacts, folderOf, build };
}

describe('build files', () => {
  it('a build is kept for a folder host while its folder is there, for an artifact host while its artifact is', async () => {
    const { places, build, folderOf, artifacts } = setup();
    const rev = await build('d', 'r1');
    expect(await buildKept(places, 'folder', rev)).toBe(true);
    expect(await buildKept(places, 'artifact', rev)).toBe(true);
    rmSync(folderOf('d', 'r1'), { recursive: true });
    expect(await buildKept(places, 'folder', rev)).toBe(false);
    expect(await buildKept(places, 'artifact', rev)).toBe(true);
    await artifacts.remove(rev.artifact!.sha256);
    expect(await buildKept(places, 'artifact', rev)).toBe(false);
    // A revision built before artifacts were kept has none: a host that needs one must build it again.
    expect(await buildKept(places, 'artifact', { ...rev, artifact: undefined })).toBe(false);
  });

  it('removeBuild takes the folder and the artifact', async () => {
    const { places, build, artifacts } = setup();
    const rev = await build('d', 'r1');
    await removeBuild(places, rev);
    expect(await buildKept(places, 'folder', rev)).toBe(false);
    expect(await artifacts.has(rev.artifact!.sha256)).toBe(false);
  });

  it('pruneBuilds keeps what `keep` names, and an artifact a kept revision shares', async () => {
    const { places, build, artifacts } = setup();
    const r1 = await build('d', 'r1', 'same');
    const r2 = await build('d', 'r2', 'other');
    // r3's record names r1's artifact: two revisions of the same content share one archive.
    const r3 = { ...(await build('d', 'r3', 'third')), artifact: r1.artifact };
    const store = { listRevisions: async () => [r1, r2, r3] as unknown as StoredRevision[] };
    await pruneBuilds(places, store, 'd', join(work, 'builds', 'd'), new Set(['r3']));
    expect(await buildKept(places, 'folder', r1)).toBe(false);
    expect(await buildKept(places, 'folder', r3)).toBe(true);
    expect(await artifacts.has(r1.artifact!.sha256)).toBe(true);
    expect(await artifacts.has(r2.artifact!.sha256)).toBe(false);
  });

  it('an archive over its bound fails the build and leaves nothing behind (incompressible content)', async () => {
    const { folderOf } = setup();
    mkdirSync(folderOf('d', 'big'), { recursive: true });
    writeFileSync(join(folderOf('d', 'big'), 'blob'), randomBytes(300_000));
    const small = new ArtifactStore(join(work, 'small'), 64 * 1024);
    await expect(small.pack(folderOf('d', 'big'))).rejects.toThrow(BuildFailure);
    expect(readdirSync(join(work, 'small'))).toEqual([]);
  });
});
