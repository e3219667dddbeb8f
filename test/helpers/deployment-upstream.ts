import type { IncomingMessage, ServerResponse } from 'node:http';
import { startUpstream, type TestUpstream } from './upstream.ts';

/**
 * A real HTTP server on port 0 standing in for one deployment's Agent Server process: it answers every request with
 * JSON naming itself (`{server, method, url}`), and `handlers` answers the paths a test sets.
 */
export interface TestDeployment extends TestUpstream {
  readonly name: string;
  readonly handlers: Map<string, (req: IncomingMessage, res: ServerResponse) => void | Promise<void>>;
}

export async function startDeployment(name: string): Promise<TestDeployment> {
  const handlers: TestDeployment['handlers'] = new Map();
  const upstream = await startUpstream((req, res) => {
    const handler = handlers.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (handler) return handler(req, res);
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ server: name, method: req.method, url: req.url });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  return Object.assign(upstream, { name, handlers });
}
