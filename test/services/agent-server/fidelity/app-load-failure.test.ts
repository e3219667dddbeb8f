import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { GraphLoadError } from '../../../../src/services/agent-server/app-config.ts';
import { createAgentServer } from '../../../../src/services/agent-server/app.ts';
import { testVerifier } from '../helpers.ts';

/**
 * One graph of the app fails to load: the server does not start, and says which graph and why in one line, both to a
 * caller of createAgentServer (a GraphLoadError, what a deployment's load check reports) and from the program run
 * alone (main.ts: that line on stderr, exit code 3, no stack).
 */
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const GOOD = fileURLToPath(new URL('../../../../examples/app/graph.ts', import.meta.url));
const dirs: string[] = [];
function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-app-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return join(dir, 'langgraph.json');
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const brokenApp = () =>
  app({
    'langgraph.json': JSON.stringify({ graphs: { agent: `${GOOD}:graph`, echo: './echo.ts:graph' } }),
    'echo.ts': "import { nothing } from '@langchain/not-a-package';\nexport const graph = nothing;\n",
  });

describe('an app with a graph that cannot load', () => {
  it('rejects with a GraphLoadError whose line names the graph and the import error', async () => {
    const err = await createAgentServer({
      configPath: brokenApp(),
      verifyApiKey: testVerifier,
      log: pino({ level: 'silent' }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GraphLoadError);
    const { line, key } = err as GraphLoadError;
    expect(key).toBe('graphs.echo');
    expect(line).toMatch(/^graphs\.echo: Cannot find (module|package) '@langchain\/not-a-package'/);
    expect(line).not.toContain('\n');
    expect((err as GraphLoadError).message).toBe(line);
  });

  it('keeps a multi-line error of a module that throws at import to its first line', async () => {
    const err = await createAgentServer({
      configPath: app({
        'langgraph.json': JSON.stringify({ graphs: { boom: './boom.ts:graph' } }),
        'boom.ts': "throw new Error('no OPENAI_API_KEY set\\n    at somewhere (boom.ts:1:7)');\n",
      }),
      verifyApiKey: testVerifier,
      log: pino({ level: 'silent' }),
    }).catch((e: unknown) => e);
    expect((err as GraphLoadError).line).toBe('graphs.boom: no OPENAI_API_KEY set');
  });

  it('names a graph whose export is not a graph', async () => {
    const err = await createAgentServer({
      configPath: app({
        'langgraph.json': JSON.stringify({ graphs: { nope: './nope.ts:graph' } }),
        'nope.ts': 'export const graph = { name: 1 };\n',
      }),
      verifyApiKey: testVerifier,
      log: pino({ level: 'silent' }),
    }).catch((e: unknown) => e);
    expect((err as GraphLoadError).line).toMatch(/^graphs\.nope: not a LangGraph graph/);
  });

  it('ends the server run alone with that one line on stderr and exit code 3', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/services/agent-server/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        APP_CONFIG: brokenApp(),
        AGENT_SERVER_PORT: '0',
        AGENT_SERVER_API_KEYS: 'k-test-0123456789abcdef',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    expect(code).toBe(3);
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^agent server: graphs\.echo: Cannot find (module|package) '@langchain\/not-a-package'/);
  }, 30_000);
});
