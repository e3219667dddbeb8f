import type { Logger } from 'pino';
import { SettingsError } from '../../../settings/env.ts';
import type { ControlPlaneStore } from '../store.ts';
import { SecretBox } from './secrets.ts';

/**
 * The box deployment secrets are sealed with: SECRETS_KEY's, else one made for this process (said in the log) unless
 * the store in Redis already holds values sealed with a key, which one made up now could never open (then the start
 * is refused, naming SECRETS_KEY).
 */
export async function chooseSecretBox(
  secretsKey: Buffer | null,
  store: ControlPlaneStore,
  log: Logger,
): Promise<SecretBox> {
  if (secretsKey !== null) return new SecretBox(secretsKey);
  const sealed = store.kind === 'redis' ? await sealedDeployments(store) : 0;
  // A key made up now could open none of them: every such deployment would stop serving at this start.
  if (sealed > 0)
    throw new SettingsError(
      'SECRETS_KEY',
      `is unset, but the control-plane store in Redis holds secrets of ${sealed} deployment(s) sealed with one: set SECRETS_KEY to that key (with a new key those deployments show serving_error until their secrets are sent again)`,
    );
  log.warn(
    { store: store.kind },
    'SECRETS_KEY is unset: deployment secrets are encrypted with a key generated for this process' +
      (store.kind === 'redis' ? ' and become unreadable after a restart' : '') +
      '; set SECRETS_KEY (base64 of 32 random bytes) in production',
  );
  return SecretBox.ephemeral();
}

/** How many deployments hold a value sealed with SECRETS_KEY (a secret, or a repo_url with credentials). */
async function sealedDeployments(store: ControlPlaneStore): Promise<number> {
  const all = await store.allDeployments();
  return all.filter((d) => d.secrets.length > 0 || (d.repo_url_sealed ?? null) !== null).length;
}
