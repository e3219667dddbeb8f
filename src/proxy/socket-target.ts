/**
 * An upstream reached on a Unix socket (a revision's Agent Server, revision-host/local/agent-socket.ts) is named
 * `unix:<absolute path>` wherever a URL names the others (route targets, createUpstream).
 */
const PREFIX = 'unix:';

export function socketTarget(path: string): string {
  return `${PREFIX}${path}`;
}

/** The socket path of a `unix:` target, or null for a URL. */
export function targetSocketPath(target: string): string | null {
  return target.startsWith(PREFIX) ? target.slice(PREFIX.length) : null;
}
