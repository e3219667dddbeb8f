import type { HttpBindings } from '@hono/node-server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono } from 'hono';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The edge as a Hono app. Every route ends in the edge handler, which works
 * on Node's raw request and response (`c.env.incoming` / `c.env.outgoing`)
 * and answers by itself: the Web Request/Response layer costs most of a
 * proxy's time and is kept off this path.
 */
export function edgeApp(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Hono<{ Bindings: HttpBindings }> {
  const app = new Hono<{ Bindings: HttpBindings }>();
  app.all('*', async (c) => {
    await handle(c.env.incoming, c.env.outgoing);
    return RESPONSE_ALREADY_SENT;
  });
  // Hono answers HEAD by running the GET route and copying its response into a new Response,
  // which @hono/node-server then writes a second time: ERR_HTTP_HEADERS_SENT and a stack trace
  // on stderr for every HEAD request. HEAD goes to the handler directly instead.
  const dispatch = app.fetch;
  app.fetch = (request, env, executionCtx) => {
    if (request.method !== 'HEAD') return dispatch(request, env, executionCtx);
    const { incoming, outgoing } = env as HttpBindings;
    return handle(incoming, outgoing).then(() => RESPONSE_ALREADY_SENT);
  };
  return app;
}
