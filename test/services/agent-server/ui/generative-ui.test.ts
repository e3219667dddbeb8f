import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultAssistantId } from '../../../../src/services/agent-server/api/assistants/lookup.ts';
import { newKey, startAgentServer, startStack, type RunningAgentServer, type Stack } from '../helpers.ts';
import { attributeValues, CARD, rawHttp, tempApps, UI_APP, withUi } from './ui-apps.ts';

/**
 * Generative UI as the official JS server serves it: `ui` of langgraph.json bundled at start, `POST /ui/{agent}`
 * (what LoadExternalComponent asks through the SDK's `client["~ui"].getComponent`) answering the `<link>` and
 * `<script>` tags, `GET /ui/{agent}/{file}` serving the bundle, public. Straight, and through the edge, whose
 * upstream sees its own Host: the tags name the edge (X-Forwarded-Host).
 */
const apps = tempApps();
afterAll(() => apps.removeAll());

describe('the Agent Server alone', () => {
  let agent: RunningAgentServer;
  const key = newKey();
  beforeAll(async () => {
    agent = await startAgentServer({ configPath: UI_APP });
  });
  afterAll(() => agent.close());

  it('the SDK gets the tags for the graph, URLs on this server', async () => {
    const client = new Client({ apiUrl: agent.url, apiKey: key });
    const html = await client['~ui'].getComponent('agent', 'weather');
    expect(attributeValues(html, 'href')).toEqual([`${agent.url}/ui/agent/entrypoint.css`]);
    expect(attributeValues(html, 'src')).toEqual([`${agent.url}/ui/agent/entrypoint.js`]);
    expect(attributeValues(html, 'data-name')).toEqual(['weather']);
    expect(attributeValues(html, 'data-shadow-root-id')).toEqual(['{{shadowRootId}}']);
  });

  it('an assistant id works as the graph name (the client sends stream.assistantId)', async () => {
    const client = new Client({ apiUrl: agent.url, apiKey: key });
    const html = await client['~ui'].getComponent(defaultAssistantId('agent'), 'weather');
    expect(attributeValues(html, 'src')).toEqual([`${agent.url}/ui/agent/entrypoint.js`]);
  });

  it('GET serves the bundle without a key: the component, its global, the stylesheet, right types', async () => {
    const js = await fetch(`${agent.url}/ui/agent/entrypoint.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    const code = await js.text();
    expect(code).toContain('var __LGUI_agent =');
    expect(code).toContain('rendered by ui-app');
    expect(code).toContain('Symbol.for("LGUI_REQUIRE")'); // react comes from the page
    expect(code).not.toContain(UI_APP.replace(/\/langgraph\.json$/, '')); // no host path in a public file
    const css = await fetch(`${agent.url}/ui/agent/entrypoint.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain('rgb(10, 20, 30)');
  });

  it('/docs lists both routes (the file route public)', async () => {
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/ui/{agent}', '/ui/{agent}/{basename}']));
  });
});

describe('an app without ui', () => {
  it('POST /ui/agent → 404 JSON saying the app has no ui', async () => {
    const agent = await startAgentServer({ configPath: apps.make({ 'langgraph.json': withUi(undefined) }) });
    try {
      const res = await fetch(`${agent.url}/ui/agent`, {
        method: 'POST',
        headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
        body: '{"name":"weather"}',
      });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: 'This app has no generative UI: its langgraph.json has no "ui"' });
    } finally {
      await agent.close();
    }
  });
});

describe('with custom auth and http.app', () => {
  it('the files stay public (the app\u2019s middleware and handler are skipped), the HTML needs the handler', async () => {
    const configPath = apps.make({
      'langgraph.json': withUi({ agent: './ui.tsx' }, { auth: { path: './auth.ts' }, http: { app: './app.ts:app' } }),
      'ui.tsx': CARD,
      'auth.ts':
        "import { Auth, HTTPException } from '@langchain/langgraph-sdk/auth';\n" +
        'export default new Auth().authenticate((req: Request) => {\n' +
        "  if (req.headers.get('x-user') !== 'ann') throw new HTTPException(401, { message: 'who are you' });\n" +
        "  return { identity: 'ann', permissions: [] };\n});\n",
      'app.ts': "import { Hono } from 'hono';\nexport const app = new Hono().get('/hello', (c) => c.text('hi'));\n",
    });
    const agent = await startAgentServer({ configPath });
    try {
      const file = await fetch(`${agent.url}/ui/agent/entrypoint.js`);
      expect(file.status).toBe(200);
      expect(await file.text()).toContain('Weather in');
      const post = (user?: string) =>
        fetch(`${agent.url}/ui/agent`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(user ? { 'x-user': user } : {}) },
          body: '{"name":"weather"}',
        });
      expect((await post()).status).toBe(401);
      const ok = await post('ann');
      expect(ok.status).toBe(200);
      expect(attributeValues(await ok.text(), 'src')).toEqual([`${agent.url}/ui/agent/entrypoint.js`]);
      expect((await fetch(`${agent.url}/hello`)).status).toBe(401); // the app's own routes are not public
    } finally {
      await agent.close();
    }
  });
});

describe('through the edge', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: UI_APP });
  });
  afterAll(() => stack.close());

  it('the tags name the edge (not the upstream the edge calls), and the files load there without a key', async () => {
    const client = new Client({ apiUrl: stack.url, apiKey: newKey() });
    const html = await client['~ui'].getComponent('agent', 'weather');
    const [src] = attributeValues(html, 'src');
    expect(src).toBe(`${stack.url}/ui/agent/entrypoint.js`);
    const js = await fetch(src!);
    expect(js.status).toBe(200);
    expect(await js.text()).toContain('rendered by ui-app');
  });

  it('a hostile name through the edge is still one escaped attribute', async () => {
    const res = await rawHttp(stack.url, {
      method: 'POST',
      path: '/ui/agent',
      headers: { 'content-type': 'application/json', 'x-api-key': newKey() },
      body: JSON.stringify({ name: '"><img src=x onerror=alert(1)>' }),
    });
    expect(res.status).toBe(200);
    expect(res.text).not.toMatch(/<img|onerror=/);
    expect(attributeValues(res.text, 'data-name')).toEqual(['"><img src=x onerror=alert(1)>']);
  });

  it('unknown agent through the edge: 404 JSON', async () => {
    const res = await fetch(`${stack.url}/ui/nope`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': newKey() },
      body: '{"name":"weather"}',
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^No UI for "nope"/);
  });
});
