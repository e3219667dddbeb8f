import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@langchain/langgraph-sdk';
import { captureLog, newKey, sdk, startAgentServer, type RunningAgentServer } from '../helpers.ts';
import { startOfficialServer, type OfficialServer } from '../official/official-server.ts';

/**
 * Issue 35, item 2: `assistants.getSchemas` and `assistants.getSubgraphs` answer what the official JS server
 * (`@langchain/langgraph-api`, run beside this one in a child process as the oracle) answers for the same app:
 * Annotation states (read from the TypeScript source), plain zod states, runtime context schemas (zod and
 * Annotation), nested subgraphs (with and without `recurse`, under a namespace). A JavaScript graph, whose source the
 * parser cannot read, still serves. Each graph's source is parsed once, not per request.
 */
const APP = fileURLToPath(new URL('../fixtures/schemas-app/langgraph.json', import.meta.url));
const TYPED = ['annotated', 'configured', 'plain', 'contextual', 'parent', 'mixed'];
// A parse takes seconds; on a loaded machine tens of them. Nothing here depends on how long.
const SLOW = 600_000;
const TIMEOUT_ENV = { LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: String(SLOW) };

describe('graph schemas as the official JS server gives them', () => {
  let ours: RunningAgentServer;
  let official: OfficialServer;
  const logs = captureLog();
  const saved = process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS;
  beforeAll(async () => {
    process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS = TIMEOUT_ENV.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS;
    [ours, official] = await Promise.all([
      startAgentServer({ configPath: APP, log: logs.log }),
      startOfficialServer(APP, TIMEOUT_ENV),
    ]);
  }, SLOW);
  afterAll(async () => {
    await Promise.all([ours?.close(), official?.close()]);
    if (saved === undefined) delete process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS;
    else process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS = saved;
  });
  const ourClient = (): Client => sdk(ours.url, newKey()).client;
  const officialClient = (): Client => sdk(official.url, null).client;

  it.each(TYPED)('answers getSchemas(%s) as the official server', { timeout: SLOW }, async (graph) => {
    const [mine, theirs] = await Promise.all([
      ourClient().assistants.getSchemas(graph),
      officialClient().assistants.getSchemas(graph),
    ]);
    expect(mine).toEqual(theirs);
  });

  it(
    'reads an Annotation state, its input and output and an Annotation context from the source',
    { timeout: SLOW },
    async () => {
      // What the comparisons above cover is not nothing: the parser's types are there.
      const annotated = await ourClient().assistants.getSchemas('annotated');
      expect(annotated.input_schema).toMatchObject({
        type: 'object',
        properties: { topic: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
      });
      expect(annotated.output_schema).toMatchObject({ properties: { draft: { anyOf: [{}, { type: 'null' }] } } });
      const configured = await ourClient().assistants.getSchemas('configured');
      expect(configured.config_schema).toMatchObject({
        properties: { model: { enum: expect.arrayContaining(['small', 'large']) }, temperature: { type: 'number' } },
      });
      expect(configured.context_schema).toEqual(configured.config_schema);
      expect(configured.state_schema).toMatchObject({ properties: { messages: { type: 'array' } } });
    },
  );

  const subgraphCases: [string, { namespace?: string; recurse?: boolean }][] = [];
  for (const graph of [...TYPED, 'untyped'])
    for (const recurse of [false, true]) subgraphCases.push([graph, { recurse }]);
  subgraphCases.push(['parent', { namespace: 'outer' }], ['parent', { namespace: 'outer', recurse: true }]);
  subgraphCases.push(['mixed', { namespace: 'zoddy', recurse: true }], ['parent', { namespace: 'nowhere' }]);

  it.each(subgraphCases)(
    'answers getSubgraphs(%s, %j) as the official server',
    { timeout: SLOW },
    async (graph, options) => {
      const [mine, theirs] = await Promise.all([
        ourClient().assistants.getSubgraphs(graph, options),
        officialClient().assistants.getSubgraphs(graph, options),
      ]);
      expect(mine).toEqual(theirs);
    },
  );

  it('gives nested subgraphs their own schemas under full namespaces', { timeout: SLOW }, async () => {
    const nested = (await ourClient().assistants.getSubgraphs('parent', { recurse: true })) as unknown as Record<
      string,
      { state?: { properties?: Record<string, unknown> } }
    >;
    expect(Object.keys(nested).sort()).toEqual(['outer', 'outer|inner']);
    expect(Object.keys(nested.outer!.state!.properties!)).toEqual(['note', 'count', 'level']);
    expect(Object.keys(nested['outer|inner']!.state!.properties!)).toEqual(['note', 'count']);
  });

  it(
    'serves a graph whose source cannot be parsed: no schemas (the official server answers 500), runs',
    { timeout: SLOW },
    async () => {
      const raw = await fetch(`${official.url}/assistants/untyped/schemas`);
      expect(raw.status).toBe(500);
      await raw.body?.cancel();

      const client = ourClient();
      expect(await client.assistants.getSchemas('untyped')).toEqual({ graph_id: 'untyped' });
      const thread = await client.threads.create();
      expect(await client.runs.wait(thread.thread_id, 'untyped', { input: { text: 'hi' } })).toEqual({ text: 'hi' });
      expect(logs.text()).toContain('graph schemas could not be read from its source');
    },
  );

  it('parses each graph source once, whatever the number of requests', { timeout: SLOW }, async () => {
    const client = ourClient();
    for (let i = 0; i < 3; i++) {
      await client.assistants.getSchemas('annotated');
      await client.assistants.getSubgraphs('parent', { recurse: true });
      await client.assistants.getSchemas('untyped');
    }
    const reads = logs
      .text()
      .split('\n')
      .filter((l) => l.includes('graph schemas'))
      .map((l) => (JSON.parse(l) as { graph: string }).graph);
    for (const graph of ['annotated', 'parent', 'untyped']) expect(reads.filter((g) => g === graph)).toHaveLength(1);
    // A zod graph never needs its source.
    expect(reads).not.toContain('plain');
  });
});
