import { realpath } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import type { RunningRevision } from '../../revision-host/revision-host.ts';
import { readInside } from '../builds/app-config.ts';
import { SecretError, secretOwner } from '../store/secrets.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import type { ServingOptions } from './serving.ts';

/**
 * Starts a revision's process from its build folder through the RevisionHost, with what the deployment gives it:
 * its org, the app config's `env`, the deployment's secrets (opened), its memory and Agent Server data prefix.
 * Rejects with a RevisionLoadError when the app cannot load.
 */
export async function launchRevision(
  o: ServingOptions,
  d: StoredDeployment,
  rev: StoredRevision,
  signal?: AbortSignal,
): Promise<RunningRevision> {
  const folder = o.folderOf(d.id, rev.id);
  const configFile = posix.normalize(rev.source_revision_config.langgraph_config_path ?? 'langgraph.json');
  const appDir = dirname(join(folder, configFile));
  const org = await o.keys.workspaceOrg(d.tenant_id);
  const env = { ...(await appEnv(folder, configFile)), ...secrets(o, d) };
  return o.host.start(
    {
      deploymentId: d.id,
      revisionId: rev.id,
      appDir,
      configPath: posix.basename(configFile),
      sourcePrefix: posix.dirname(configFile) === '.' ? '' : posix.dirname(configFile),
      org,
      env,
      memoryMb: memoryOf(d) ?? o.memoryMb,
      dataPrefix: `${o.dataPrefix}:${d.id}`,
    },
    signal,
  );
}

/** The deployment's secrets opened; one that cannot be is named, with what to do (never its value). */
function secrets(o: ServingOptions, d: StoredDeployment): Record<string, string> {
  return Object.fromEntries(
    d.secrets.map((s) => {
      try {
        return [s.name, o.box.open(s.ciphertext, secretOwner(d.id, s.name))];
      } catch (err) {
        if (!(err instanceof SecretError)) throw err;
        throw new SecretError(
          `its secret ${s.name} cannot be opened: ${err.message}, or send the deployment's secrets again (a PATCH with secrets and a source_revision_config.repo_ref)`,
        );
      }
    }),
  );
}

/** `resource_spec.memory_mb` when it is a sensible number of MiB. */
function memoryOf(d: StoredDeployment): number | null {
  const mb = d.source_config.resource_spec?.memory_mb;
  return typeof mb === 'number' && Number.isInteger(mb) && mb >= 64 && mb <= 65_536 ? mb : null;
}

/**
 * The `env` of an app config: an object of values, or the path of a `.env` file next to it. Both files are read only
 * where they resolve inside the build folder, symlinks included: a running app may replace its own `.env` with a link
 * to a host file after its build checked it, and the next start must not read that file into its environment.
 */
async function appEnv(folder: string, configFile: string): Promise<Record<string, string>> {
  const root = await realpath(folder).catch(() => null);
  if (root === null) return {};
  let env: unknown;
  try {
    env = (JSON.parse((await readInside(root, configFile)) ?? '{}') as { env?: unknown }).env;
  } catch {
    return {};
  }
  if (env !== null && typeof env === 'object' && !Array.isArray(env)) {
    return Object.fromEntries(
      Object.entries(env as Record<string, unknown>)
        .filter(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && ['string', 'number', 'boolean'].includes(typeof v))
        .map(([k, v]) => [k, String(v)]),
    );
  }
  if (typeof env !== 'string') return {};
  // A file of the app only (the same folder or below): never a file elsewhere on this host.
  const file = posix.normalize(posix.join(posix.dirname(configFile), env.replace(/\\/g, '/')));
  if (file.startsWith('..') || posix.isAbsolute(file)) return {};
  const text = (await readInside(root, file)) ?? '';
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) out[m[1]!] = m[2]!.replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
}
