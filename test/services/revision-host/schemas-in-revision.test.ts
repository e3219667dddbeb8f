import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG } from '../../../src/keys/bootstrap.ts';
import { LocalProcessHost } from '../../../src/services/revision-host/local/local-process-host.ts';
import type { RunningRevision } from '../../../src/services/revision-host/revision-host.ts';
import { httpUrl } from '../../helpers/target-url.ts';
import { sdk } from '../agent-server/helpers.ts';

/**
 * A deployment's process reads an `Annotation` graph's schemas from its TypeScript source as the bundled server does
 * (issue 35, item 2): the parser's child process runs in the revision's sandbox (bubblewrap where it works here, its
 * app folder read-only), one parse after another, within the default deployment's memory bound.
 */
const APP_DIR = dirname(fileURLToPath(new URL('../agent-server/fixtures/schemas-app/langgraph.json', import.meta.url)));
const SLOW = 600_000;

describe('graph schemas in a revision process', () => {
  let host: LocalProcessHost;
  let revision: RunningRevision;
  beforeAll(async () => {
    host = new LocalProcessHost({
      log: pino({ level: process.env.DEBUG_REVISION_LOG ?? 'silent' }),
      redis: null,
      verifyKey: async () => DEFAULT_ORG,
      loadTimeoutMs: SLOW,
    });
    revision = await host.start({
      deploymentId: 'schemas',
      revisionId: 'r1',
      appDir: APP_DIR,
      configPath: 'langgraph.json',
      org: DEFAULT_ORG,
      env: { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: String(SLOW) },
      memoryMb: 512,
      dataPrefix: 'schemas-test',
    });
  }, SLOW);
  afterAll(async () => {
    await revision?.stop(1000);
    await host?.close();
  });

  it("answers an Annotation graph's schemas and its subgraphs' from the source", { timeout: SLOW }, async () => {
    const client = sdk(await httpUrl(revision.target), 'any-key').client;
    const schemas = await client.assistants.getSchemas('annotated');
    expect(schemas.input_schema).toMatchObject({
      type: 'object',
      properties: { topic: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
    });
    const subgraphs = await client.assistants.getSubgraphs('parent', { recurse: true });
    expect(Object.keys(subgraphs).sort()).toEqual(['outer', 'outer|inner']);
    expect((subgraphs as unknown as Record<string, { state?: unknown }>).outer!.state).toMatchObject({
      properties: { level: { type: 'string' } },
    });
    // One parse after another within the bound: on Node 24 a worker thread kept ~300 MB after each, and the second
    // parse put the process over its memory (killed); a child process gives all of it back.
    expect((await client.assistants.getSchemas('configured')).config_schema).toMatchObject({
      properties: { temperature: { type: 'number' } },
    });
    expect((await client.assistants.getSchemas('mixed')).state_schema).toMatchObject({
      properties: { note: { type: 'string' } },
    });
    expect(await revision.health()).toBe(true);
  });
});
