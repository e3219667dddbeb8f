import { open, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { isInside } from '../../shared/inside-folder.ts';

/**
 * What a revision's start needs of its build folder, read once at build time with a size bound, and kept in the
 * revision's record: the app config's text (`APP_CONFIG_MAX_BYTES`) and its `env` (a map, or a `.env` file of at most
 * `APP_ENV_MAX_BYTES`). A start or restart never reads the folder again: the running app can write there, and a 21 MB
 * `.env` parsed on the edge's event loop at every restart grew the gateway to 1 GiB.
 */
export const APP_CONFIG_MAX_BYTES = 64 * 1024;
export const APP_ENV_MAX_BYTES = 256 * 1024;

/** What readBounded answers for a file larger than its bound. */
export const TOO_BIG = Symbol('too big');

/**
 * The text of `file` (relative to `rootReal`, a real path) when it is a regular file inside it, symlinks resolved;
 * null when it is not; TOO_BIG when it is larger than `maxBytes`. The bound is checked on what is read, not on a size
 * asked beforehand (the file may grow in between), and no more than `maxBytes + 1` bytes are ever held.
 */
export async function readBounded(
  rootReal: string,
  file: string,
  maxBytes: number,
): Promise<string | null | typeof TOO_BIG> {
  let real: string;
  try {
    real = await realpath(join(rootReal, ...file.split('/')));
  } catch {
    return null;
  }
  if (!isInside(rootReal, real)) return null;
  const handle = await open(real, 'r').catch(() => null);
  if (handle === null) return null;
  try {
    if (!(await handle.stat()).isFile()) return null;
    const buf = Buffer.alloc(maxBytes + 1);
    let got = 0;
    while (got <= maxBytes) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    if (got > maxBytes) return TOO_BIG;
    return buf.subarray(0, got).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** `KEY=value` lines (`export KEY=value`, quotes around the value removed); other lines are skipped. */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
}

/** The `env` map of an app config: names a process environment takes, scalar values as strings. */
export function envMap(env: Readonly<Record<string, unknown>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env)
      .filter(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && ['string', 'number', 'boolean'].includes(typeof v))
      .map(([k, v]) => [k, String(v)]),
  );
}

export function kib(bytes: number): string {
  return `${Math.round(bytes / 1024)} KiB`;
}
