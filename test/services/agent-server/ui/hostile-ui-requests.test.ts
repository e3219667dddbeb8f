import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, startAgentServer, type RunningAgentServer } from '../helpers.ts';
import { attributeValues, rawHttp, UI_APP } from './ui-apps.ts';

/**
 * What a request controls in `POST /ui/{agent}`'s HTML (the component `name`, the Host and X-Forwarded-* headers)
 * never becomes markup or script, and `GET /ui/{agent}/{file}` serves the bundler's files and nothing else.
 */
let agent: RunningAgentServer;
let port: string;
const key = newKey();

beforeAll(async () => {
  agent = await startAgentServer({ configPath: UI_APP });
  port = new URL(agent.url).port;
});
afterAll(() => agent.close());

const postUi = (body: unknown, headers: Record<string, string> = {}, path = '/ui/agent') =>
  rawHttp(agent.url, {
    method: 'POST',
    path,
    headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', 'x-api-key': key, ...headers },
    body: JSON.stringify(body),
  });

describe('a hostile component name stays data', () => {
  const hostile = `x' onerror='alert(1)" onload="alert(2)"><script>alert(3)</script>{{shadowRootId}}&#60;`;

  it('is one escaped data attribute: no other tag, no other handler, the placeholder once', async () => {
    const res = await postUi({ name: hostile });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const html = res.text;
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html.match(/<link /g)).toHaveLength(1);
    expect(html.match(/</g)).toHaveLength(3); // <link, <script, </script>
    expect(html.match(/onload=/g)).toHaveLength(1);
    expect(html).not.toMatch(/onerror=|alert\(|<script>/);
    expect(html.split('{{shadowRootId}}')).toHaveLength(2);
    // The browser's dataset reads the name back exactly; the handler is fixed text.
    expect(attributeValues(html, 'data-name')).toEqual([hostile]);
    expect(html).toContain('onload="__LGUI_agent.render(this.dataset.name, this.dataset.shadowRootId)"');
  });

  it('a name that is not a string is 422, as any invalid body', async () => {
    const res = await postUi({ name: { toString: '<script>' } });
    expect(res.status).toBe(422);
  });
});

describe('a hostile Host or X-Forwarded-* is refused, never written', () => {
  it.each([
    ['host', 'evil.example"><script>alert(1)</script>'],
    ['host', "evil.example' onload='x"],
    ['x-forwarded-host', 'a.example/<svg onload=alert(1)>'],
    ['x-forwarded-proto', 'javascript'],
    ['x-forwarded-prefix', '/x"><script>'],
  ])('%s: %s → 400 JSON, nothing of it written', async (name, value) => {
    const res = await postUi({ name: 'weather' }, { [name]: value });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).not.toMatch(/<|alert|onload/);
    // A Host that is no URL's host is refused by the listener already (Malformed request: Invalid URL).
    if (name !== 'host') expect(JSON.parse(res.text)).toEqual({ detail: `${name}: not a valid host, scheme or path` });
  });

  it('a Host the listener takes but that is not a host name (underscore, spaces) → 400 naming Host', async () => {
    const res = await postUi({ name: 'weather' }, { host: 'evil_host.example' });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toEqual({ detail: 'host: not a valid host, scheme or path' });
  });

  it('a plain other host is used as the page reaches it (protocol-relative, as the official server)', async () => {
    const res = await postUi({ name: 'weather' }, { host: 'agents.example.com' });
    expect(attributeValues(res.text, 'src')).toEqual(['//agents.example.com/ui/agent/entrypoint.js']);
  });
});

describe('unknown agents and files', () => {
  it('POST /ui/<graph without ui> → 404 JSON naming what has ui', async () => {
    const res = await postUi({ name: 'weather' }, {}, '/ui/nope');
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toEqual({ detail: 'No UI for "nope": the app\'s langgraph.json has "ui" for agent' });
  });

  it('POST /ui/<an assistant id that is not there> → 404 as any unknown name', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const res = await postUi({ name: 'weather' }, {}, `/ui/${id}`);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text)).toEqual({ detail: `No UI for "${id}": the app's langgraph.json has "ui" for agent` });
  });

  it('POST /ui/agent without a key → 401 (the API\u2019s authentication)', async () => {
    const res = await rawHttp(agent.url, {
      method: 'POST',
      path: '/ui/agent',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"weather"}',
    });
    expect(res.status).toBe(401);
  });

  it.each([
    '/ui/agent/..%2Flanggraph.json',
    '/ui/agent/%2E%2E%2F%2E%2E%2Flanggraph.json',
    '/ui/agent/../../langgraph.json',
    '/ui/agent/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
    '/ui/agent/ui.tsx',
    '/ui/agent/src%2Fui.tsx',
    '/ui/agent/schemas.json',
    '/ui/..%2F..%2Fsrc/ui.tsx',
    '/ui/nope/entrypoint.js',
    '/ui/agent/entrypoint.js/x',
  ])('GET %s → 404 JSON, nothing of a file', async (path) => {
    const res = await rawHttp(agent.url, { path });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).not.toMatch(/root:|graphs|weather/);
  });
});

describe('the scheme of the URLs', () => {
  it.each([
    [{ host: 'agents.example.com', 'x-forwarded-proto': 'https' }, 'https://agents.example.com'],
    // `http` from a proxy may be the hop after a TLS balancer: the page's own scheme (protocol-relative) then.
    [{ host: 'agents.example.com', 'x-forwarded-proto': 'http' }, '//agents.example.com'],
    [{ host: 'localhost:8123' }, 'http://localhost:8123'],
    [{ 'x-forwarded-host': 'gw.example', 'x-forwarded-prefix': '/deployments/d-1/' }, '//gw.example/deployments/d-1'],
  ])('%j → %s', async (headers, origin) => {
    const res = await postUi({ name: 'weather' }, headers);
    expect(attributeValues(res.text, 'src')).toEqual([`${origin}/ui/agent/entrypoint.js`]);
  });
});
