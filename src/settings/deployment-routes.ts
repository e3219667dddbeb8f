import { optionalUrl, SettingsError, text, type Env } from './env.ts';
import { servicePrefix } from './key-registry.ts';

/**
 * The deployments' addressing, read by the edge and by the control plane, which must agree on it: one reader of each
 * variable for both.
 */

/**
 * ROUTES_PREFIX (default `routes`): where the deployment route table lives in Redis (the table's keys also carry the
 * REGION).
 */
export function routesPrefixSetting(env: Env): string {
  return servicePrefix(env, 'ROUTES_PREFIX', 'routes');
}

/** PUBLIC_URL without its trailing slash; no query or fragment (a deployment's path is appended to it). */
export function publicUrl(env: Env): string | null {
  const v = optionalUrl(env, 'PUBLIC_URL', ['http:', 'https:']);
  if (v === null) return null;
  const url = new URL(v);
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
    throw new SettingsError('PUBLIC_URL', `must be a plain http(s) address without credentials, query or fragment`);
  return v.replace(/\/+$/, '');
}

/** A DNS name (`deploy.example.com`, `localhost`), lowercased, without a leading dot or a port. */
export function deploymentsDomain(env: Env): string | null {
  const v = text(env, 'DEPLOYMENTS_DOMAIN', '').toLowerCase().replace(/^\./, '');
  if (v === '') return null;
  const label = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
  if (v.length > 253 || !new RegExp(`^${label}(?:\\.${label})*$`).test(v))
    throw new SettingsError('DEPLOYMENTS_DOMAIN', `must be a domain name such as deploy.example.com, got "${v}"`);
  return v;
}
