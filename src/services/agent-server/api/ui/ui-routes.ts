import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { httpStatusOf } from '../../auth/custom-handlers.ts';
import type { ServerContext } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import type { UiBundles } from '../../ui/ui-bundle.ts';
import { requestOrigin } from '../../ui/request-origin.ts';
import { uiTags } from '../../ui/ui-tags.ts';
import { visibleAssistant } from '../assistants/lookup.ts';
import { operation, param, type Operation } from '../operations.ts';

/**
 * Generative UI, as the official JS server serves it (its `ui/load.mts`): `POST /ui/{agent}` answers the HTML that
 * loads a graph's bundled components (what `LoadExternalComponent` asks for), `GET /ui/{agent}/{file}` the bundled
 * files. The files are public, as on the official server (a `<script src>` sends no API key); they are only the ones
 * the bundler made, looked up by name in memory: no path reaches a file system. The HTML goes through the app's
 * authentication like any API route. `agent` is the graph's name, or an assistant's id the caller may read (the
 * client sends `assistantId` when the stream has no namespace; the official server knows graph names only).
 */
const nameBody = z.object({ name: z.string().max(256) });

export function uiOperations(ctx: ServerContext, bundles: UiBundles): Operation[] {
  return [
    operation({
      method: 'post',
      path: '/ui/{agent}',
      operationId: 'ui_component',
      summary: 'The HTML that loads a graph\u2019s UI components',
      description:
        'Answers `<link>` and `<script>` tags for the bundle of `ui.<graph>` of langgraph.json; the script renders the component `name` into the shadow root `{{shadowRootId}}` (what `LoadExternalComponent` of `@langchain/langgraph-sdk/react-ui` does).',
      tag: 'UI',
      body: nameBody,
      headers: { 'x-forwarded-host': 'The host the page reaches this server at, when behind a proxy (else Host).' },
      responses: {
        200: { description: 'The tags.', contentType: 'text/html' },
        400: { description: 'A Host, X-Forwarded-Host, -Proto or -Prefix that is not one.' },
        404: { description: 'No UI for that graph or assistant.' },
      },
      handler: async (c, { body }) => {
        const agent = await bundleName(c, ctx, bundles, param(c, 'agent'));
        const where = requestOrigin((h) => c.req.header(h));
        if ('badHeader' in where) throw new ApiError(400, `${where.badHeader}: not a valid host, scheme or path`);
        const files = [...bundles.get(agent)!.keys()];
        return c.body(uiTags({ agent, name: body.name, origin: where.origin, files }), 200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
        });
      },
    }),
    operation({
      method: 'get',
      path: '/ui/{agent}/{basename}',
      operationId: 'ui_file',
      summary: 'A file of a graph\u2019s UI bundle',
      description: 'Public, as on the official server: a `<script src>` or `<link href>` carries no credentials.',
      tag: 'UI',
      public: true,
      responses: {
        200: { description: 'The file (JavaScript or CSS).', contentType: 'text/javascript' },
        404: { description: 'No such file.' },
      },
      handler: (c) => {
        const file = bundles.get(param(c, 'agent'))?.get(param(c, 'basename'));
        if (file === undefined) throw new ApiError(404, 'File not found');
        return c.body(file.contents as Uint8Array<ArrayBuffer>, 200, {
          'content-type': file.contentType,
          'x-content-type-options': 'nosniff',
          'cache-control': 'no-cache',
        });
      },
    }),
  ];
}

/** The graph whose bundle `agent` names: a graph with `ui`, or the graph of an assistant the caller may read. */
async function bundleName(c: Context<AgentEnv>, ctx: ServerContext, bundles: UiBundles, agent: string) {
  if (bundles.has(agent)) return agent;
  const noUi = () =>
    new ApiError(
      404,
      bundles.size === 0
        ? 'This app has no generative UI: its langgraph.json has no "ui"'
        : `No UI for "${agent.slice(0, 128)}": the app's langgraph.json has "ui" for ${[...bundles.keys()].join(', ')}`,
    );
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(agent)) throw noUi();
  // Not there, or not the caller's (404 or the handler's 403): no UI, as for any name. A failing store still fails.
  const assistant = await visibleAssistant(c, ctx, agent, 'read').catch((err: unknown) => {
    const status = httpStatusOf(err)?.status;
    if (status === 404 || status === 403) return null;
    throw err;
  });
  if (assistant === null || !bundles.has(assistant.graph_id)) throw noUi();
  return assistant.graph_id;
}
