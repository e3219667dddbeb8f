import { realpath } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import type { RunningRevision } from '../../revision-host/revision-host.ts';
import { APP_CONFIG_MAX_BYTES, APP_ENV_MAX_BYTES, envMap, parseDotenv, readBounded } from '../builds/app-env.ts';
import { memoryOf } from '../resource-spec.ts';
import { SecretError, secretOwner } from '../store/secrets.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import type { ServingOptions } from './serving-options.ts';

/**
 * Starts a revision's process from its build folder through the RevisionHost, with what the deployment gives it:
 * its org, the app's env as its build read it (the revision's record: nothing here reads the folder, which the app
 * can write), the deployment's secrets (opened), its memory (within MAX_MEMORY_MB) and Agent Server data prefix.
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
  const built = rev.app_env === undefined ? await legacyAppEnv(folder, configFile) : (rev.app_env ?? {});
  const env = { ...built, ...secrets(o, d) };
  return o.host.start(
    {
      deploymentId: d.id,
      revisionId: rev.id,
      appDir,
      configPath: posix.basename(configFile),
      sourcePrefix: posix.dirname(configFile) === '.' ? '' : posix.dirname(configFile),
      org,
      env,
      memoryMb: memoryOf(d.source_config.resource_spec, o.memoryMb, o.maxMemoryMb ?? 65_536),
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

/**
 * A revision built before its env was kept in its record (`app_env` absent): read from the folder once more, but
 * bounded like a build reads it (app-env.ts), so a file the app grew at run time costs at most that. A rebuild keeps
 * the env in the record and this path goes.
 */
async function legacyAppEnv(folder: string, configFile: string): Promise<Record<string, string>> {
  const root = await realpath(folder).catch(() => null);
  if (root === null) return {};
  const text = await readBounded(root, configFile, APP_CONFIG_MAX_BYTES);
  if (typeof text !== 'string') return {};
  let env: unknown;
  try {
    env = (JSON.parse(text) as { env?: unknown }).env;
  } catch {
    return {};
  }
  if (env !== null && typeof env === 'object' && !Array.isArray(env)) return envMap(env as Record<string, unknown>);
  if (typeof env !== 'string') return {};
  // A file of the app only (the same folder or below): never a file elsewhere on this host.
  const file = posix.normalize(posix.join(posix.dirname(configFile), env.replace(/\\/g, '/')));
  if (file.startsWith('..') || posix.isAbsolute(file)) return {};
  const dotenv = await readBounded(root, file, APP_ENV_MAX_BYTES);
  return typeof dotenv === 'string' ? parseDotenv(dotenv) : {};
}
