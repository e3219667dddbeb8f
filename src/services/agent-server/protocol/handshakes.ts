import type { RequestAuth } from '../auth/authenticate.ts';

/**
 * The WebSocket handshakes in flight: socket.ts passes each one through the app as a request (so it meets the same
 * middleware, authentication and authorization as any request) and the route (api/threads/protocol-routes.ts) leaves
 * the caller here when it accepts it. Only socket.ts makes these Request objects: an ordinary request that merely
 * carries `Upgrade` headers is not one.
 */
export const handshakes = new WeakMap<Request, { auth?: RequestAuth }>();
