import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The app with generative UI the tests serve: the example chat graph, and `ui.agent` → a React card (src/ui.tsx). */
export const UI_APP = fileURLToPath(new URL('../fixtures/ui-app/langgraph.json', import.meta.url));
export const GRAPH = fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url));
export const CARD = 'export default { weather: (p: { city: string }) => <b>Weather in {p.city}</b> };\n';

/** Temporary apps made of `files` (path → text, or `{link}` for a symlink); removed by `removeAll`. */
export function tempApps() {
  const dirs: string[] = [];
  return {
    make(files: Record<string, string | { link: string }>): string {
      const dir = mkdtempSync(join(tmpdir(), 'ui-app-'));
      dirs.push(dir);
      for (const [name, content] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, name)), { recursive: true });
        if (typeof content === 'string') writeFileSync(join(dir, name), content);
        else symlinkSync(content.link, join(dir, name));
      }
      return join(dir, 'langgraph.json');
    },
    removeAll: () => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })),
  };
}

/** `{graphs: {agent}, ui}` as langgraph.json text. */
export const withUi = (ui: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ graphs: { agent: `${GRAPH}:graph` }, ui, ...extra });

/** A request with headers fetch will not send as given (Host), answered as status, headers and text. */
export function rawHttp(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({
      hostname,
      port,
      method: options.method ?? 'GET',
      path: options.path,
      headers: options.headers,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The values of `attr` in `html`, character references decoded (what the browser's `dataset` reads). */
export function attributeValues(html: string, attr: string): string[] {
  return [...html.matchAll(new RegExp(`${attr}="([^"]*)"`, 'g'))].map((m) =>
    m[1]!.replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code))),
  );
}
