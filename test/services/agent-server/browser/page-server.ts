import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';

export interface PageServer {
  /** The page's address: an origin of its own, apart from the gateway's. */
  readonly url: string;
  close(): Promise<void>;
}

/** A page that runs `entry` (bundled for the browser with esbuild), served on 127.0.0.1 at a port of its own. */
export async function servePage(entry: string): Promise<PageServer> {
  const bundle = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const js = bundle.outputFiles[0]!.text;
  const html =
    '<!doctype html><html><body><div id="root"></div><script type="module" src="/page.js"></script></body></html>';
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/page.js')) res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
