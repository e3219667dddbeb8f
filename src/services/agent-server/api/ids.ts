import { createHash, randomUUID } from 'node:crypto';

/** A new random (v4) UUID. */
export const newId = (): string => randomUUID();

/**
 * Namespace of default assistant ids: the one the public server uses, so a graph's default assistant has the same id
 * there and here.
 */
export const GRAPH_NAMESPACE = '6ba7b821-9dad-11d1-80b4-00c04fd430c8';

/** RFC 4122 version 5 UUID (SHA-1 of namespace and name): stable across restarts. */
export function uuid5(name: string, namespace = GRAPH_NAMESPACE): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
