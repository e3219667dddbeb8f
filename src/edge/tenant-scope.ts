import type { Destination } from '../routing/router.ts';
import { identityOf, type IdentitySource } from '../rules/identity.ts';
import type { Limit } from '../rules/types.ts';

/**
 * Which tenant's allowance a count comes out of. A user id is whatever the client sends, and a client address is
 * shared by everyone behind one NAT: counted across the whole gateway, one organisation's clients (`x-user-id: alice`
 * from an office's address, or a hundred runs held from it) would spend what another organisation's users behind the
 * same address are allowed. So `user-ip` buckets, and in-flight slots counted by client address, are keyed by the
 * deployment the request is for as well. An API key already belongs to one organisation; the per-IP rate guard stays
 * gateway-wide on purpose (it bounds what one address costs the edge itself, whatever it asks for).
 */
export function tenantOf(destination: Destination, own: string | null): string {
  // The default deployment is the gateway's own, at the bare paths as at `/deployments/{id}`: one count for both.
  if (destination.kind !== 'deployment' || destination.deploymentId === own) return '';
  return destination.deploymentId;
}

/** The identity `limit` counts `request` by: its usual one, within the request's tenant where that is shared. */
export function countedIdentity(request: IdentitySource & { readonly tenant?: string }, limit: Limit): string {
  return withinTenant(identityOf(request, limit.by), request.tenant, limit);
}

/** `identity` as `limit` counts it for a request to deployment `tenant` ('' or absent: the gateway's own). */
export function withinTenant(identity: string, tenant: string | undefined, limit: Limit): string {
  if (tenant === undefined || tenant === '') return identity;
  const scoped = limit.by === 'user-ip' || (limit.by === 'ip' && limit.until !== null);
  // NUL, which neither a header value nor an address holds: no two (identity, tenant) pairs collide.
  return scoped ? `${identity}\u0000${tenant}` : identity;
}
