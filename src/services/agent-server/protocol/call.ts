import type { RequestAuth } from '../auth/authenticate.ts';
import type { ServerContext } from '../context.ts';
import type { ProtocolThread, ProtocolThreads } from './threads.ts';

/** Everything a command needs: the server, the protocol's threads, the caller and the thread of the path. */
export interface ProtocolCall {
  readonly ctx: ServerContext;
  readonly threads: ProtocolThreads;
  readonly auth: RequestAuth;
  /** The request's headers (the WebSocket handshake's): their `x-*` reach a run's configurable as for REST runs. */
  readonly headers?: Headers;
  readonly thread: ProtocolThread;
  /** Told the id of a run the command started (run.start, input.respond, state.fork): the HTTP answer names it. */
  readonly onRunStarted?: (runId: string) => void;
}
