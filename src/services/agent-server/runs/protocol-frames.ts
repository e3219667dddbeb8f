import type { GraphProtocolEvent } from '../graphs.ts';
import { frame, type Frame } from './frames.ts';

/**
 * A protocol event of LangGraph's `streamEvents(..., {version: 'v3'})` as a frame of the run, named as the official
 * server names them: its method, then `|<namespace>` for a subgraph's (`messages|model:<task id>`); `data` is the
 * event's data. So a run started through the protocol is an ordinary run: its readers (`runs.joinStream`, the
 * thread's stream) get these frames, and protocol/follow-run.ts turns them back into protocol events, numbered per
 * thread. A message event's `node` is not kept (the frame has no room for it; the protocol makes it optional).
 * Null for an event whose data cannot be written as JSON (a cycle): it is left out, not the run.
 */
export function protocolFrame(event: GraphProtocolEvent): Frame | null {
  const { namespace, data } = event.params;
  const name = namespace.length === 0 ? event.method : `${event.method}|${namespace.join('|')}`;
  try {
    return frame(name, data);
  } catch {
    return null;
  }
}

/** A frame of a protocol run back as its method, namespace and data (the inverse of protocolFrame). */
export function protocolFrameParts(f: Frame): { method: string; namespace: string[]; data: unknown } {
  const [method, ...namespace] = f.event.split('|');
  return { method: method!, namespace, data: JSON.parse(f.data) as unknown };
}
