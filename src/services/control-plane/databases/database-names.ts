import { createHmac } from 'node:crypto';

/**
 * A deployment's PostgreSQL names and password. The role and the database
 * share one name, `gw_dep_<the deployment id's letters and digits>`
 * (lowercase, at most 63 bytes: PostgreSQL's identifier bound), so a
 * deployment id can never put a quote or a space in SQL; the statements
 * quote it all the same (quoteIdent). The password is an HMAC of the
 * control plane's SECRETS_KEY and the deployment id: nothing to store, the
 * same after a restart and on every gateway of the region, and re-set on the
 * role at each revision start (so a new SECRETS_KEY rotates every password).
 */
export const NAME_PREFIX = 'gw_dep_';
const MAX_IDENTIFIER = 63;

/** The role's and the database's name of a deployment. */
export function deploymentDatabaseName(deploymentId: string): string {
  const tail = deploymentId.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (tail.length === 0) throw new TypeError(`deployment id ${JSON.stringify(deploymentId)} has no letter or digit`);
  return (NAME_PREFIX + tail).slice(0, MAX_IDENTIFIER);
}

/** The role's password: 64 hex digits, safe in a URL as is. */
export function deploymentDatabasePassword(key: Buffer, deploymentId: string): string {
  return createHmac('sha256', key).update(`deployment-database:${deploymentId}`).digest('hex');
}

/** An identifier in double quotes (inner quotes doubled), as PostgreSQL reads it. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A string literal in single quotes (inner quotes doubled; standard_conforming_strings is on since 9.1). */
export function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}
