import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The bytes of the files under `dir` (symlinks counted as links, never followed), stopping once past `limit`: a
 * checkout or `node_modules` far over its limit is not walked to the end. A file's apparent size counts, so a sparse
 * file is as large as it claims.
 */
export async function folderBytes(dir: string, limit: number): Promise<number> {
  let total = 0;
  const pending = [dir];
  while (pending.length > 0 && total <= limit) {
    const at = pending.pop()!;
    const entries = await readdir(at, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const path = join(at, e.name);
      if (e.isDirectory()) pending.push(path);
      else total += (await lstat(path).catch(() => ({ size: 0 }))).size;
      if (total > limit) break;
    }
  }
  return total;
}

/** `512 MiB`, for a reason. */
export function mib(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MiB`;
}
