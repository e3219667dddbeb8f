import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AppConfigError, readAppConfig } from '../../../src/services/agent-server/app-config.ts';
import { createAgentServer } from '../../../src/services/agent-server/app.ts';
import { FIXTURE_APP, FIXTURE_AUTH_APP, testVerifier } from './helpers.ts';

const dirs: string[] = [];
function app(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-app-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return join(dir, 'langgraph.json');
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const serve = (configPath: string) =>
  createAgentServer({ configPath, verifyApiKey: testVerifier, log: pino({ level: 'silent' }) });

describe('app config', () => {
  it('maps each graph to its file and export, relative to the config file', async () => {
    const config = await readAppConfig(FIXTURE_APP);
    expect([...config.graphs.keys()]).toEqual([
      'agent',
      'slow',
      'failing',
      'custom',
      'uncompiled',
      'factory',
      'whoami',
      'remember',
      'approval',
      'reviewed',
    ]);
    expect(config.graphs.get('agent')).toMatchObject({
      exportName: 'graph',
      file: expect.stringMatching(/\/examples\/app\/graph\.ts$/),
    });
    expect(config.auth).toBeNull();
  });

  it('takes the default export when auth.path names no export', async () => {
    const config = await readAppConfig(FIXTURE_AUTH_APP);
    expect(config.auth).toMatchObject({
      exportName: 'default',
      file: expect.stringMatching(/fixtures\/auth-app\/auth\.ts$/),
    });
  });

  it('accepts {"path": ...} graph entries', async () => {
    const path = app({
      'langgraph.json': JSON.stringify({ graphs: { g: { path: './g.ts:graph' } } }),
      'g.ts': 'export const graph = 1;',
    });
    expect((await readAppConfig(path)).graphs.get('g')?.exportName).toBe('graph');
  });

  it.each([
    ['not JSON', '{graphs', /not valid JSON/],
    ['no graphs', '{}', /"graphs" is required: a map of graph name/],
    ['a graph without export', '{"graphs": {"g": "./missing.ts:graph"}}', /graphs\.g: file .*missing\.ts not found/],
    ['a bad export name', '{"graphs": {"g": "./g.ts:not-valid"}}', /graphs\.g: "not-valid" is not a valid export name/],
    ['a bad graph name', '{"graphs": {"a b": "./g.ts:graph"}}', /graph names are 1-128/],
    [
      'a missing auth file',
      '{"graphs": {"g": "./g.ts:graph"}, "auth": {"path": "./nope.ts:auth"}}',
      /auth\.path: file .*nope\.ts not found/,
    ],
  ])('rejects %s, naming the file and the key', async (_name, text, message) => {
    const path = app({ 'langgraph.json': text, 'g.ts': 'export const graph = 1;' });
    const err = await readAppConfig(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppConfigError);
    expect((err as Error).message).toContain(path);
    expect((err as Error).message).toMatch(message);
  });

  it('names the exports a module has when the named one is missing', async () => {
    const path = app({
      'langgraph.json': '{"graphs": {"g": "./g.ts:graph"}}',
      'g.ts': 'export const other = 1; export const more = 2;',
    });
    await expect(serve(path)).rejects.toThrow(/has no export "graph" \(it exports: other, more\)/);
  });

  it('refuses an export that is not a graph', async () => {
    const path = app({
      'langgraph.json': '{"graphs": {"g": "./g.ts:graph"}}',
      'g.ts': 'export const graph = { hello: 1 };',
    });
    await expect(serve(path)).rejects.toThrow(/graphs\.g: not a LangGraph graph/);
  });

  it('refuses an auth export that is not an Auth object', async () => {
    const path = app({
      'langgraph.json': JSON.stringify({
        graphs: { agent: `${FIXTURE_APP.replace(/langgraph\.json$/, '')}graphs.ts:slow` },
        auth: { path: './auth.ts:auth' },
      }),
      'auth.ts': 'export const auth = { nope: true };',
    });
    await expect(serve(path)).rejects.toThrow(/auth\.path: expected an Auth object/);
  });
});
