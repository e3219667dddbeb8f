import { posix } from 'node:path';
import { extract, list, type ReadEntry } from 'tar';

/**
 * Unpacks a build's artifact (a gzipped tar, its sha256 already checked: fetch-artifact.ts) into the pod's app
 * folder. Every entry is read first, and the whole archive refused before anything is written when one would leave
 * the folder: an absolute path, a `..`, a link (symbolic or hard) pointing outside, or anything but files, folders
 * and links (devices, FIFOs). Then it is extracted with tar's own guards on as well (strict: a warning fails it).
 */
export class ArchiveRefused extends Error {
  constructor(reason: string) {
    super(`the artifact is refused: ${reason}; nothing unpacked`);
    this.name = 'ArchiveRefused';
  }
}

const KINDS = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

export async function unpackArtifact(file: string, into: string): Promise<void> {
  let refusal: string | null = null;
  await list({
    file,
    // Long names and pax headers arrive as attributes of the entry they describe: what is read here is final.
    onReadEntry: (entry: ReadEntry) => {
      refusal ??= entryRefusal(entry);
      entry.resume();
    },
  });
  if (refusal !== null) throw new ArchiveRefused(refusal);
  await extract({ file, cwd: into, strict: true, preservePaths: false, preserveOwner: false });
}

/** Why one entry would leave the folder (or is not a kind an app's build holds), or null. */
function entryRefusal(entry: ReadEntry): string | null {
  const path = entry.path;
  if (!KINDS.has(entry.type)) return `entry ${JSON.stringify(path)} is a ${entry.type}`;
  if (leaves(path)) return `entry ${JSON.stringify(path)} leaves the app folder`;
  if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
    const target = entry.linkpath ?? '';
    // A symbolic link is relative to its own folder; a hard link names a path of the archive.
    const resolved = entry.type === 'SymbolicLink' ? posix.join(posix.dirname(path), target) : target;
    if (posix.isAbsolute(target) || leaves(resolved))
      return `link ${JSON.stringify(path)} points outside the app folder (${JSON.stringify(target)})`;
  }
  return null;
}

function leaves(path: string): boolean {
  if (posix.isAbsolute(path) || /^[A-Za-z]:/.test(path) || path.includes('\\')) return true;
  const normal = posix.normalize(path);
  return normal === '..' || normal.startsWith('../') || path.split('/').includes('..');
}
