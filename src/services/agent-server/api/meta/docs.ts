import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Hono } from 'hono';
import type { AgentEnv } from '../../auth/authenticate.ts';
import { notFoundJson } from '../../../shared/http-errors.ts';

/**
 * GET /docs: the interactive API reference (Swagger UI) of this
 * deployment, rendering /openapi.json. Every script and style comes from
 * this server (the swagger-ui-dist package), never a CDN, so the page works
 * offline; a strict Content-Security-Policy keeps it that way. URLs are
 * relative, so the page also works when the server sits under a path prefix.
 */
const require = createRequire(import.meta.url);
const DIST = dirname(require.resolve('swagger-ui-dist/package.json'));

const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: join(DIST, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: join(DIST, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: join(DIST, 'favicon-32x32.png'), type: 'image/png' },
};

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: new URL('openapi.json', document.baseURI).href,
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: false,
  });
});
`;

function page(title: string): string {
  const safe = title.replace(/[<>&"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${safe}</title>
  <link rel="icon" type="image/png" href="docs/favicon-32x32.png">
  <link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js"></script>
  <script src="docs/init.js"></script>
</body>
</html>
`;
}

export function mountDocs(
  app: Hono<AgentEnv>,
  { title, document }: { title: string; document: () => Record<string, unknown> },
): void {
  const cache = new Map<string, Buffer>();
  let json: string | null = null;
  app.get('/openapi.json', (c) => {
    json ??= JSON.stringify(document());
    return c.body(json, 200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' });
  });
  app.get('/docs', (c) => c.html(page(title), 200, { 'content-security-policy': CSP, 'cache-control': 'no-cache' }));
  app.get('/docs/init.js', (c) =>
    c.body(INIT, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }),
  );
  app.get('/docs/:asset', async (c) => {
    const asset = ASSETS[c.req.param('asset')];
    if (asset === undefined) return notFoundJson(c);
    let bytes = cache.get(asset.file);
    if (bytes === undefined) {
      bytes = await readFile(asset.file);
      cache.set(asset.file, bytes);
    }
    return c.body(new Uint8Array(bytes), 200, { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' });
  });
}
