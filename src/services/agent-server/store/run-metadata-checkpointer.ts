import type { BaseCheckpointSaver } from '@langchain/langgraph';

/** Configurable keys never written into a checkpoint's metadata: its own ids and the authenticated user. */
const EXCLUDED = new Set([
  'checkpoint_ns',
  'checkpoint_id',
  'checkpoint_map',
  'run_id',
  'thread_id',
  'langgraph_auth_user',
  'service_auth_user',
  'langgraph_auth_permissions',
]);

/**
 * `saver`, writing each run's metadata into the metadata of the checkpoints the run makes, as the official server
 * does: the run's configurable (but LangGraph's internal `__` keys, the checkpoint ids and the user), then the run's
 * metadata (`run_id`, `assistant_id`, `graph_id`, what the client gave), then LangGraph's own (`source`, `step`, ...).
 * So `threads.getHistory({metadata: {...}})` finds a run's checkpoints.
 */
export function withRunMetadata(saver: BaseCheckpointSaver): BaseCheckpointSaver {
  const put: BaseCheckpointSaver['put'] = (config, checkpoint, metadata, versions) => {
    const configurable = Object.entries(config.configurable ?? {}).filter(
      ([k, v]) => !k.startsWith('__') && !EXCLUDED.has(k) && isPlain(v),
    );
    if (configurable.length === 0 && config.metadata === undefined)
      return saver.put(config, checkpoint, metadata, versions);
    const merged = { ...Object.fromEntries(configurable), ...plainOnly(config.metadata), ...metadata };
    return saver.put(config, checkpoint, merged, versions);
  };
  const bound = new Map<PropertyKey, unknown>(); // each method bound once, not at every call
  return new Proxy(saver, {
    get(target, prop) {
      if (prop === 'put') return put;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(prop);
      if (fn === undefined) bound.set(prop, (fn = (value as (...a: unknown[]) => unknown).bind(target)));
      return fn;
    },
  });
}

/** JSON-like values only (a configurable may hold callbacks, stores, signals...). */
function isPlain(v: unknown): boolean {
  if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) return true;
  if (Array.isArray(v)) return v.every(isPlain);
  if (typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && Object.values(v).every(isPlain);
}

function plainOnly(metadata: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(metadata ?? {}).filter(([, v]) => isPlain(v)));
}
