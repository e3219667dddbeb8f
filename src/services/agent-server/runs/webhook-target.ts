import { addressPolicy, type AddressPolicy } from '../../shared/outbound-address.ts';

/**
 * Where a run's `webhook` may point: an absolute http(s) URL without credentials whose host is public (every address it
 * resolves to), unless WEBHOOK_HOSTS_ALLOWED names the host or the address — the same check as a deployment's
 * `repo_url` (services/shared/outbound-address.ts), applied in every mode: any caller with a key names the URL.
 */
export interface WebhookTarget {
  readonly url: URL;
  /** The addresses checked, to connect to (no second DNS answer); null when WEBHOOK_HOSTS_ALLOWED names the host. */
  readonly addresses: readonly string[] | null;
}

export type WebhookVerdict = { readonly refused: string } | { readonly refused: null; readonly target: WebhookTarget };

export class WebhookTargets {
  private readonly policy: AddressPolicy;

  constructor(allowed: readonly string[]) {
    this.policy = addressPolicy(allowed);
  }

  /** Checks `raw` now (its host resolved): why it is refused, naming `webhook`, or the target to connect to. */
  async admit(raw: string): Promise<WebhookVerdict> {
    const url = URL.canParse(raw) ? new URL(raw) : null;
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return { refused: 'webhook: must be an absolute http:// or https:// URL' };
    if (url.username !== '' || url.password !== '')
      return { refused: 'webhook: credentials in the URL are not supported (put a token in its path or query)' };
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const verdict = await this.policy.admit(url.hostname, port);
    if (verdict.refused !== null)
      return {
        refused: `webhook: ${verdict.refused}${verdict.reserved ? '; allowed only when WEBHOOK_HOSTS_ALLOWED names it' : ''}`,
      };
    return { refused: null, target: { url, addresses: verdict.addresses } };
  }
}

/** The URL as a log line may show it: scheme, host and port only (a webhook's path or query often holds a token). */
export function webhookOrigin(raw: string): string {
  return URL.canParse(raw) ? new URL(raw).origin : '(not a URL)';
}
