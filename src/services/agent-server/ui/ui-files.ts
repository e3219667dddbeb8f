import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { isInside } from '../../shared/inside-folder.ts';
import type { UiConfig } from '../../shared/langgraph-ui-config.ts';

/**
 * The files of `ui` (generative UI components), each checked to be a regular file inside the app's folder (where the
 * config file is), symlinks resolved: the bundler reads them and whatever they import, and a deployment's repository
 * is anyone's. An absolute path, a `../` path or a link that leads out is refused naming its key, before anything
 * reads it (only realpath and stat), so no byte of a file outside reaches a message or a bundle.
 */
export class UiFileError extends Error {}

/** Name → absolute path of its file, inside `appDir`. */
export async function uiComponentFiles(appDir: string, ui: UiConfig): Promise<ReadonlyMap<string, string>> {
  const files = new Map<string, string>();
  if (ui.components.size === 0) return files;
  const root = await realpath(appDir);
  for (const [name, file] of ui.components) {
    const key = `ui.${name}`;
    if (isAbsolute(file) || /^[A-Za-z]:[\\/]/.test(file))
      throw new UiFileError(`${key}: ${file} must be a path relative to the app's folder, e.g. "./src/ui.tsx"`);
    const full = resolve(appDir, file);
    if (!isInside(resolve(appDir), full)) throw new UiFileError(`${key}: file ${file} is outside the app's folder`);
    const real = await realpath(full).catch(() => null);
    if (real === null) throw new UiFileError(`${key}: file ${file} not found`);
    // Inside first: whether a file outside exists, or what it is, is none of the app's business.
    if (!isInside(root, real)) throw new UiFileError(`${key}: file ${file} points outside the app's folder`);
    if (!(await stat(real)).isFile()) throw new UiFileError(`${key}: ${file} is not a file`);
    files.set(name, full);
  }
  return files;
}
