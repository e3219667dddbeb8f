import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AppConfigError, GraphLoadError } from '../../../../src/services/agent-server/app-config.ts';
import { createAgentServer } from '../../../../src/services/agent-server/app.ts';
import { FIXTURE_APP, newKey, sdk, startAgentServer, startStack, testVerifier } from '../helpers.ts';

/** The `http` block of langgraph.json: CORS (default and configured), disabled route groups, and its errors. */
const RESTRICTED = fileURLToPath(new URL('../fixtures/fidelity-app/langgraph.restricted.json', import.meta.url));
const dirs: string[] = [];
function app(config: unknown, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-app-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify(config));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return join(dir, 'langgraph.json');
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const serve = (configPath: string) =>
  createAgentServer({ configPath, verifyApiKey: testVerifier, log: pino({ level: 'silent' }) });

describe('the http block of langgraph.json', () => {
  it('answers CORS for any origin by default, exposing Content-Location, and preflights without credentials', async () => {
    const agent = await startAgentServer({ configPath: FIXTURE_APP });
    try {
      const preflight = await fetch(`${agent.url}/threads`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example.org',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-api-key, content-type',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
      const created = await fetch(`${agent.url}/threads`, {
        method: 'POST',
        headers: { origin: 'https://app.example.org', 'x-api-key': newKey(), 'content-type': 'application/json' },
        body: '{}',
      });
      expect(created.status).toBe(200);
      expect(created.headers.get('access-control-allow-origin')).toBe('*');
      // What the JS client reads in a browser: a run's id, where to rejoin a stream, search pages.
      expect(created.headers.get('access-control-expose-headers')?.split(',')).toEqual([
        'content-location',
        'location',
        'x-pagination-total',
        'x-pagination-next',
      ]);
    } finally {
      await agent.close();
    }
  });

  it('follows http.cors and leaves out the route groups it disables, through the edge', async () => {
    const stack = await startStack({ configPath: RESTRICTED });
    try {
      const from = (origin: string) =>
        fetch(`${stack.url}/assistants/search`, {
          method: 'POST',
          headers: { origin, 'x-api-key': newKey(), 'content-type': 'application/json' },
          body: '{}',
        });
      const allowed = await from('https://studio.example.com');
      expect(allowed.status).toBe(200);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://studio.example.com');
      expect(allowed.headers.get('access-control-expose-headers')).toBe(
        'x-request-id,content-location,location,x-pagination-total,x-pagination-next',
      );
      expect((await from('https://evil.example.net')).headers.get('access-control-allow-origin')).toBeNull();

      const client = sdk(stack.url, newKey()).client;
      await expect(client.store.putItem(['notes'], 'k', { v: 1 })).rejects.toMatchObject({ status: 404 });
      expect((await client.assistants.getSchemas('writer')).graph_id).toBe('writer');
    } finally {
      await stack.close();
    }
  });

  it.each([
    [{ app: 3 }, /http\.app: must be "<file>:<export>" of a Hono app/],
    [{ cors: { allow_origin_regex: '(' } }, /http\.cors\.allow_origin_regex: must be a valid regular expression/],
    [{ cors: { allow_origins: 'https://a' } }, /http\.cors\.allow_origins: must be a list of strings/],
    [{ disable_store: 'yes' }, /http\.disable_store: must be true or false/],
    [
      { configurable_headers: { include: 'x-*' } },
      /http\.configurable_headers\.include: must be a list of header names/,
    ],
  ])('refuses http %j with a message naming the key', async (http, message) => {
    const err = await serve(app({ graphs: { g: './g.ts:graph' }, http }, { 'g.ts': 'export const graph = 1;' })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppConfigError);
    expect((err as Error).message).toMatch(message);
  });

  it('refuses an env block that is not a map of strings, and an http.app that is not a Hono app', async () => {
    await expect(
      serve(app({ graphs: { g: './g.ts:graph' }, env: { A: { nested: 1 } } }, { 'g.ts': 'export const graph = 1;' })),
    ).rejects.toThrow(/env: must be a map of variable names to string values, or the path of a \.env file/);
    const err = await serve(
      app(
        {
          graphs: { g: `${fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url))}:graph` },
          http: { app: './r.ts:app' },
        },
        { 'r.ts': 'export const app = { routes: 1 };' },
      ),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GraphLoadError);
    expect((err as GraphLoadError).line).toBe('http.app: ./r.ts:app is not a Hono app (new Hono() from "hono")');
  });

  it('reads env from a .env file named by the env block', async () => {
    const name = `FIDELITY_ENV_FILE_${process.pid}`;
    const path = app(
      {
        graphs: { g: `${fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url))}:graph` },
        env: './.env',
      },
      { '.env': `# comment\n${name}="from the file"\n` },
    );
    const server = await serve(path);
    try {
      expect(process.env[name]).toBe('from the file');
    } finally {
      await server.close();
      delete process.env[name];
    }
  });

  it('sends the design studio through the auth handler with auth.disable_studio_auth', async () => {
    const graph = `${fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url))}:graph`;
    const handler = fileURLToPath(new URL('../fixtures/auth-app/auth.ts', import.meta.url));
    const studioSearch = (url: string) =>
      fetch(`${url}/assistants/search`, {
        method: 'POST',
        headers: { 'x-api-key': newKey(), 'x-auth-scheme': 'langsmith', 'content-type': 'application/json' },
        body: '{}',
      });
    for (const [disabled, status] of [
      [false, 200],
      [true, 401],
    ] as const) {
      const agent = await startAgentServer({
        configPath: app({ graphs: { g: graph }, auth: { path: handler, disable_studio_auth: disabled } }),
      });
      try {
        expect((await studioSearch(agent.url)).status).toBe(status);
      } finally {
        await agent.close();
      }
    }
  });

  it('refuses a LANGGRAPH_CONFIG that is not a JSON map of graph configs', async () => {
    const graph = `${fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url))}:graph`;
    try {
      await expect(serve(app({ graphs: { g: graph }, env: { LANGGRAPH_CONFIG: '{"g": ' } }))).rejects.toThrow(
        /^LANGGRAPH_CONFIG: not valid JSON/,
      );
    } finally {
      delete process.env.LANGGRAPH_CONFIG;
    }
    try {
      process.env.LANGGRAPH_CONFIG = '{"g": 3}';
      await expect(serve(app({ graphs: { g: graph } }))).rejects.toThrow(
        'LANGGRAPH_CONFIG: must map each graph name to a config object',
      );
    } finally {
      delete process.env.LANGGRAPH_CONFIG;
    }
  });
});
