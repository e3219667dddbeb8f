import { secretOwner, type SecretBox } from '../store/secrets.ts';
import type { StoredDeployment } from '../types.ts';

/**
 * A `repo_url` carrying credentials (`https://user:TOKEN@host/x`) is kept like a secret: the full URL only sealed
 * (`repo_url_sealed`, AES-256-GCM under SECRETS_KEY, owner `<deployment>:source_config.repo_url`), and
 * `source_config.repo_url` holds the redacted form, which is all the API ever returns. The user name stays (it tells
 * which account the token belongs to, and an HTTPS user name is no secret); the password or a bare token becomes
 * `***`. A PATCH that sends the redacted form back unchanged (a client echoing what GET gave it) keeps the sealed
 * credentials.
 */
const USERINFO = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@\s]*)@/i;
const REPO_URL_OWNER = 'source_config.repo_url';

/** `https://user:TOKEN@h/x` → `https://user:***@h/x`; `https://TOKEN@h/x` → `https://***@h/x`; others unchanged. */
export function redactRepoUrl(url: string): string {
  const m = USERINFO.exec(url);
  if (!m) return url;
  const [whole, scheme, info] = m as unknown as [string, string, string];
  const colon = info.indexOf(':');
  let shown: string;
  if (colon !== -1) shown = `${info.slice(0, colon)}:***`;
  else if (/^https?$/i.test(scheme))
    shown = '***'; // a bare token in the user name's place
  else return url; // ssh://git@host: a user name only
  return `${scheme}://${shown}@${url.slice(whole.length)}`;
}

export interface StoredRepoUrl {
  readonly repo_url: string | null;
  readonly repo_url_sealed: string | null;
}

/**
 * How `url` (as the client sent it) is stored for deployment `d`. `previous`: the deployment as stored before a PATCH,
 * whose credentials are kept when `url` is its redacted form.
 */
export function storeRepoUrl(
  box: SecretBox,
  deploymentId: string,
  url: string | null,
  previous?: Pick<StoredDeployment, 'source_config' | 'repo_url_sealed'>,
): StoredRepoUrl {
  if (url === null) return { repo_url: null, repo_url_sealed: null };
  if (previous && url === previous.source_config.repo_url)
    return { repo_url: url, repo_url_sealed: previous.repo_url_sealed ?? null };
  const redacted = redactRepoUrl(url);
  if (redacted === url) return { repo_url: url, repo_url_sealed: null };
  return { repo_url: redacted, repo_url_sealed: box.seal(url, secretOwner(deploymentId, REPO_URL_OWNER)) };
}

/** The URL to clone, credentials included: for the builder only, never for an answer or a log line. */
export function openRepoUrl(d: StoredDeployment, box: SecretBox | undefined): string | null {
  if (!d.repo_url_sealed || box === undefined) return d.source_config.repo_url;
  return box.open(d.repo_url_sealed, secretOwner(d.id, REPO_URL_OWNER));
}
