import type { Settings } from '../settings/settings.ts';
import { SettingsError } from '../settings/env.ts';
import { trustedProxies, type TrustedProxies } from './client-ip.ts';

/** TRUST_PROXY and IPV6_PREFIX as the edge handler takes them; a bad CIDR fails at boot naming the variable. */
export function clientIpSettings(settings: Settings): { trust: TrustedProxies; ipv6PrefixBits: number } {
  try {
    return { trust: trustedProxies(settings.trustProxy), ipv6PrefixBits: settings.ipv6PrefixBits };
  } catch (err) {
    throw new SettingsError('TRUST_PROXY', (err as Error).message);
  }
}
