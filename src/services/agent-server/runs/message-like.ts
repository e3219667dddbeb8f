/**
 * LangChain messages recognised by their own markers, never by prototype identity: an app deployed with its own
 * `package.json` has its own copy (and maybe another version) of `@langchain/core`, whose classes are not this
 * server's. A message has `_getType()` (every version) or the `lc_namespace` of messages; a chunk (a streamed token,
 * merged with the next by `concat`) also has `concat`, and its class is named `...Chunk`.
 */
export interface MessageLike {
  id?: string;
  _getType?(): string;
  concat?(other: MessageLike): MessageLike;
}

export function isMessageLike(v: unknown): v is MessageLike {
  if (typeof v !== 'object' || v === null) return false;
  const m = v as { _getType?: unknown; lc_namespace?: unknown };
  if (typeof m._getType === 'function') return true;
  return Array.isArray(m.lc_namespace) && m.lc_namespace.includes('messages');
}

export function isMessageChunkLike(v: unknown): v is MessageLike & { concat(other: MessageLike): MessageLike } {
  if (!isMessageLike(v) || typeof v.concat !== 'function') return false;
  const ctor = (v as { constructor?: { lc_name?: () => unknown; name?: unknown } }).constructor;
  const name = typeof ctor?.lc_name === 'function' ? ctor.lc_name() : ctor?.name;
  return typeof name !== 'string' || name === '' || name.endsWith('Chunk');
}
