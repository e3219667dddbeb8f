import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RouteTable } from '../../../src/routing/route-table.ts';
import { Client } from '@langchain/langgraph-sdk';
import { expect } from 'vitest';
import type { TestControlPlane, Tenant, Client as ApiClient } from '../control-plane/helpers.ts';
import { eventually, waitForRevision } from '../control-plane/helpers.ts';
import { httpUrl } from '../../helpers/target-url.ts';

/**
 * Apps for the deployment tests: one graph `echo` answering
 * `<version> <GREETING> <TOKEN>: <text>`, GREETING from the langgraph.json
 * `env`, TOKEN a secret; `configurable.delay_ms` slows the node down (an
 * open stream during a rollover); the text `exit` ends the process (code 7).
 */
export function graphSource(version: string, extraImport = ''): string {
  return `${extraImport}import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ text: Annotation<string>(), answer: Annotation<string>() });
export const graph = new StateGraph(State)
  .addNode('respond', async (s: { text: string }, config: { configurable?: Record<string, unknown> }) => {
    if (s.text === 'exit') process.exit(7);
    const delay = Number(config?.configurable?.delay_ms ?? 0);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    return { answer: \`${version} \${process.env.GREETING ?? '-'} \${process.env.TOKEN ?? 'no-token'}: \${s.text}\` };
  })
  .addEdge(START, 'respond')
  .addEdge('respond', END)
  .compile();
`;
}

export const CONFIG = JSON.stringify({ graphs: { echo: './graph.ts:graph' }, env: { GREETING: 'hello' } });

/** An app without a package.json: it runs on the gateway's @langchain packages (CommonJS, through NODE_PATH). */
export const BARE_APP = { 'langgraph.json': CONFIG, 'graph.ts': graphSource('v1') };

/** An app with its own package.json (ESM, no dependencies: `npm install` runs offline; @langchain/* through the hook). */
export const PACKAGED_APP = {
  ...BARE_APP,
  'package.json': JSON.stringify({ name: 'packaged-app', private: true, type: 'module' }),
};

/** The revision's status once final, failing the test with its message when it is not DEPLOYED. */
export async function deployed(api: ApiClient, deploymentId: string, revisionId: string) {
  const rev = await waitForRevision(api, deploymentId, revisionId, undefined, 60_000);
  expect(rev.status, rev.status_message ?? '').toBe('DEPLOYED');
  return rev;
}

/** The route's target now (throws when the deployment has none). */
export function target(t: TestControlPlane, deploymentId: string): string {
  const route = t.cp.routes.get(deploymentId);
  if (!route) throw new Error(`no route for ${deploymentId}`);
  return route.target;
}

/** One run of `echo` at `url` (a URL or a route's `unix:` target) with the unmodified SDK: the answer. */
export async function ask(url: string, tenant: Tenant, text = 'hi'): Promise<string> {
  const sdk = new Client({ apiUrl: await httpUrl(url), apiKey: tenant.key });
  const values = (await sdk.runs.wait(null, 'echo', { input: { text } })) as { answer?: string };
  return values.answer ?? '';
}

export function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function untilServing(t: TestControlPlane, deploymentId: string, tenant: Tenant, starts: string) {
  return eventually(
    async () => {
      const route = t.cp.routes.get(deploymentId);
      if (!route) return null;
      const answer = await ask(route.target, tenant).catch(() => '');
      return answer.startsWith(starts) ? answer : null;
    },
    30_000,
    `deployment ${deploymentId} answering ${starts}`,
  );
}

/**
 * A stand-in for the edge's deployment routing (the edge half is tested with the edge): `/deployments/{id}/...` is
 * forwarded, prefix stripped, to the route's target; an unknown deployment answers 404.
 */
export async function pathForwarder(routes: RouteTable): Promise<{ url: string; close(): Promise<void> }> {
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const m = /^\/deployments\/([^/?]+)(.*)$/.exec(req.url ?? '');
    const route = m ? routes.get(m[1]!) : undefined;
    if (!m || !route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'no such deployment' }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && !['host', 'connection'].includes(k)),
    ) as Record<string, string>;
    const upstream = await fetch((await httpUrl(route.target)) + (m[2] || '/'), {
      method: req.method,
      headers,
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers));
    if (upstream.body) for await (const chunk of upstream.body) res.write(chunk);
    res.end();
  };
  // A target that fails (a revision just stopped) answers 502 as the edge would, instead of a rejection nobody sees.
  const server = createServer((req, res) => {
    forward(req, res).catch(() => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
