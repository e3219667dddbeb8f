/**
 * Commands of the thread-centric protocol (`@langchain/protocol`) that start work: inside a WebSocket on
 * `/threads/{thread_id}/stream/events` each one is limited as the same command sent over HTTP,
 * `POST /threads/{thread_id}/commands`, by the identity of the socket's upgrade. A socket is no way around a limit.
 */
export const WORK_METHODS: ReadonlySet<string> = new Set(['run.start', 'input.respond']);

const STREAM_PATH = /^\/threads\/([^/]+)\/stream\/events$/;

/** The HTTP request a socket's work command is counted as, for a socket opened on `path`; null: none is inspected. */
export function commandsPath(path: string): string | null {
  const m = STREAM_PATH.exec(path);
  return m === null ? null : `/threads/${m[1]}/commands`;
}

/** The thread id of a socket opened on `/threads/{thread_id}/stream/events`; null for any other path. */
export function threadOf(path: string): string | null {
  const m = STREAM_PATH.exec(path);
  if (m === null) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}
