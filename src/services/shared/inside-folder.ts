import { isAbsolute, relative, sep } from 'node:path';

/** Whether `path` lies strictly below `root` (both absolute, symlinks already resolved by the caller). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith('..' + sep) && !isAbsolute(rel);
}
