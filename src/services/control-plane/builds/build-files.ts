import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredRevision } from '../types.ts';
import type { ArtifactStore } from './artifacts.ts';

/**
 * A revision's build on disk: its folder on this machine (`<BUILD_WORK_DIR>/<region>/<deployment>/<revision>`, what
 * the local host runs) and its artifact (ARTIFACTS_DIR, what a host off this machine runs). The one place that says
 * whether a build is still there, in the terms of the host that would run it, and that removes builds.
 */
export interface BuildPlaces {
  readonly folderOf: (deploymentId: string, revisionId: string) => string;
  readonly artifacts?: ArtifactStore | null;
}

type BuildOf = Pick<StoredRevision, 'deployment_id' | 'id' | 'artifact'>;

/** Whether the revision's build can serve again (a redeploy or a restart) on a host that runs from `runsFrom`. */
export async function buildKept(p: BuildPlaces, runsFrom: 'folder' | 'artifact', rev: BuildOf): Promise<boolean> {
  if (runsFrom === 'folder') return existsSync(p.folderOf(rev.deployment_id, rev.id));
  const sha256 = rev.artifact?.sha256;
  return sha256 !== undefined && p.artifacts != null && (await p.artifacts.has(sha256));
}

/** Removes the revision's folder and its artifact (a failed or superseded build). */
export async function removeBuild(p: BuildPlaces, rev: BuildOf): Promise<void> {
  await rm(p.folderOf(rev.deployment_id, rev.id), { recursive: true, force: true });
  if (rev.artifact && p.artifacts) await p.artifacts.remove(rev.artifact.sha256);
}

/**
 * Keeps the builds of the revisions in `keep` (folders and artifacts); every other build of the deployment goes. An
 * artifact a kept revision shares (the same content, so the same sha256) stays.
 */
export async function pruneBuilds(
  p: BuildPlaces,
  store: Pick<ControlPlaneStore, 'listRevisions'>,
  deploymentId: string,
  deploymentFolder: string,
  keep: ReadonlySet<string>,
): Promise<void> {
  const folders = await readdir(deploymentFolder).catch(() => [] as string[]);
  await Promise.all(
    folders.filter((f) => !keep.has(f)).map((f) => rm(p.folderOf(deploymentId, f), { recursive: true, force: true })),
  );
  if (!p.artifacts) return;
  const revisions = await store.listRevisions(deploymentId, undefined, { limit: 100, offset: 0 });
  const kept = new Set(revisions.filter((r) => keep.has(r.id) && r.artifact).map((r) => r.artifact!.sha256));
  const gone = revisions.filter((r) => !keep.has(r.id) && r.artifact && !kept.has(r.artifact.sha256));
  await Promise.all(gone.map((r) => p.artifacts!.remove(r.artifact!.sha256)));
}
