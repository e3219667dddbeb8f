import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistantPatch, assistantSearch } from '../../../../src/services/agent-server/api/assistants/schemas.ts';
import { runCreate } from '../../../../src/services/agent-server/api/runs/schemas.ts';
import { STREAM_MODES } from '../../../../src/services/agent-server/runs/stream-modes.ts';
import { newKey, startStack, type Stack } from '../helpers.ts';

/**
 * /docs: an interactive reference generated from the schemas the routes
 * validate with, whose scripts and styles this server serves itself (the
 * machine is offline: no CDN). Rendered in headless Chromium through the edge.
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);

let stack: Stack;
let doc: any;
beforeAll(async () => {
  stack = await startStack();
  doc = await (await fetch(`${stack.url}/openapi.json`)).json();
});
afterAll(() => stack.close());

describe('the OpenAPI document', () => {
  it('describes every route, public ones without security', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/ok',
        '/info',
        '/assistants',
        '/assistants/search',
        '/assistants/{assistant_id}',
        '/threads',
        '/threads/search',
        '/threads/{thread_id}',
        '/threads/{thread_id}/state',
        '/runs/stream',
        '/threads/{thread_id}/runs/stream',
        '/runs/wait',
      ]),
    );
    expect(doc.paths['/info'].get.security).toEqual([]);
    expect(doc.paths['/runs/stream'].post.security).toBeUndefined();
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(Object.keys(doc.paths['/runs/stream'].post.responses['200'].content)).toEqual(['text/event-stream']);
    expect(doc.paths['/threads/{thread_id}'].get.parameters).toEqual([
      { name: 'thread_id', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'include', in: 'query', required: false, schema: expect.objectContaining({ type: 'string' }) },
    ]);
  });

  it('describes the update, delete and run control operations', async () => {
    const methods = (path: string) => Object.keys(doc.paths[path] ?? {}).sort();
    expect(methods('/assistants/{assistant_id}')).toEqual(['delete', 'get', 'patch']);
    expect(methods('/threads/{thread_id}')).toEqual(['delete', 'get', 'patch']);
    expect(methods('/threads/{thread_id}/runs/{run_id}')).toEqual(['delete', 'get']);
    expect(methods('/threads/{thread_id}/runs/{run_id}/cancel')).toEqual(['post']);
    expect(methods('/threads/{thread_id}/runs/{run_id}/join')).toEqual(['get']);
    expect(methods('/threads/{thread_id}/runs/{run_id}/stream')).toEqual(['get']);
    expect(methods('/runs/{run_id}/stream')).toEqual(['get']);
    const cancel = doc.paths['/threads/{thread_id}/runs/{run_id}/cancel'].post;
    expect(cancel.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'path:thread_id',
      'path:run_id',
      'query:wait',
      'query:action',
    ]);
    expect(Object.keys(cancel.responses)).toEqual(expect.arrayContaining(['202', '204', '404']));
    expect(cancel.responses['204'].content).toBeUndefined();
    expect(doc.paths['/assistants/{assistant_id}'].delete.parameters.map((p: { name: string }) => p.name)).toContain(
      'delete_threads',
    );
    const join = doc.paths['/threads/{thread_id}/runs/{run_id}/stream'].get;
    expect(Object.keys(join.responses['200'].content)).toEqual(['text/event-stream']);
    expect(join.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual([
      'path:thread_id',
      'path:run_id',
      'query:cancel_on_disconnect',
      'query:stream_mode',
      'header:Last-Event-ID',
    ]);
    expect(doc.paths['/threads/{thread_id}/runs/stream'].post.responses['200'].headers.Location.description).toMatch(
      /Last-Event-ID/,
    );
    const { $schema: _, ...patch } = z.toJSONSchema(assistantPatch, { io: 'input', unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    expect(doc.paths['/assistants/{assistant_id}'].patch.requestBody.content['application/json'].schema).toEqual(patch);
  });

  it('is generated from the very schemas the routes validate with', async () => {
    const { $schema: _, ...search } = z.toJSONSchema(assistantSearch, {
      io: 'input',
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    expect(doc.paths['/assistants/search'].post.requestBody.content['application/json'].schema).toEqual(search);
    const modes = doc.paths['/runs/stream'].post.requestBody.content['application/json'].schema.properties.stream_mode;
    expect(JSON.stringify(modes)).toContain(JSON.stringify([...STREAM_MODES]));
    // ...and the route enforces what the document says.
    expect(runCreate.safeParse({ assistant_id: 'a', stream_mode: 'bogus' }).success).toBe(false);
    const res = await fetch(`${stack.url}/runs/stream`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
      body: '{"assistant_id": "agent", "stream_mode": "bogus"}',
    });
    expect(res.status).toBe(422);
  });
});

describe('the /docs page', () => {
  it('loads only from this server, under a strict Content-Security-Policy', async () => {
    const res = await fetch(`${stack.url}/docs`);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const html = await res.text();
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs).toEqual([
      'docs/favicon-32x32.png',
      'docs/swagger-ui.css',
      'docs/swagger-ui-bundle.js',
      'docs/init.js',
    ]);
    for (const ref of refs) {
      const asset = await fetch(`${stack.url}/${ref}`);
      expect(asset.status).toBe(200);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    for (const other of ['package.json', 'index.html', 'swagger-initializer.js'])
      expect((await fetch(`${stack.url}/docs/${other}`)).status).toBe(404);
  });

  it.skipIf(hasChromium)(
    `renders in headless Chromium — SKIPPED: ${CHROMIUM} is missing (apt-get install chromium)`,
    () => {},
  );

  it.runIf(hasChromium)('renders in headless Chromium and lists the endpoints', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      const problems: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
      page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
      page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
      await page.goto(`${stack.url}/docs`);
      await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
      const paths = await page.$$eval('.opblock-summary-path', (els) =>
        els.map((e) => e.textContent?.replace(/\u200b/g, '')),
      );
      expect(paths).toEqual(
        expect.arrayContaining([
          '/assistants/search',
          '/threads',
          '/threads/{thread_id}',
          '/runs/stream',
          '/threads/{thread_id}/runs/stream',
          '/runs/wait',
          '/info',
        ]),
      );
      expect(await page.title()).toBe('Agent Server API');
      expect(await page.locator('.info .title').innerText()).toContain('Agent Server API');
      expect(problems).toEqual([]);
      expect(requested.filter((u) => !u.startsWith(stack.url) && !u.startsWith('data:'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
