import { cp, mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BaseMessageChunk } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryAgentStore } from '../../../../src/services/agent-server/store/memory-agent-store.ts';
import { RedisCheckpointer } from '../../../../src/services/agent-server/store/redis-checkpointer.ts';
import { RedisAgentStore } from '../../../../src/services/agent-server/store/redis-agent-store.ts';
import { deleteByPrefix } from '../../../helpers/redis-keys.ts';
import { sharedRedis, uniquePrefix } from '../../../helpers/shared-redis.ts';
import { collect, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * A deployed app has its own `package.json`, so its own copy of `@langchain/core` (and LangGraph) in its own
 * `node_modules`: its messages are not instances of the server's classes. Its chat model's tokens must still stream as
 * `messages/partial`. The app is made here: a directory with real copies of `@langchain/core` and
 * `@langchain/langgraph` (everything else linked to the project's packages) and a graph in plain JavaScript.
 */
const GRAPH = `
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { AIMessageChunk } from '@langchain/core/messages';
import { MessagesAnnotation, StateGraph, START, END } from '@langchain/langgraph';

export const sample = new AIMessageChunk({ id: 'sample', content: 'x' });
export const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', async (state, config) => ({
    messages: [await new FakeListChatModel({ responses: ['tokens of my own'] }).invoke(state.messages, config)],
  }))
  .addEdge(START, 'model')
  .addEdge('model', END)
  .compile();
`;

async function appWithOwnCore(): Promise<{ dir: string; config: string }> {
  const project = await realpath(fileURLToPath(new URL('../../../../node_modules', import.meta.url)));
  const dir = await mkdtemp(join(tmpdir(), 'own-core-app-'));
  const modules = join(dir, 'node_modules');
  await mkdir(join(modules, '@langchain'), { recursive: true });
  for (const entry of await readdir(project)) {
    if (entry === '@langchain' || entry.startsWith('.')) continue;
    await symlink(join(project, entry), join(modules, entry));
  }
  for (const pkg of await readdir(join(project, '@langchain'))) {
    const from = join(project, '@langchain', pkg);
    const to = join(modules, '@langchain', pkg);
    if (pkg === 'core' || pkg === 'langgraph') await cp(from, to, { recursive: true });
    else await symlink(from, to);
  }
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'own-core-app', type: 'module' }));
  await writeFile(join(dir, 'graph.mjs'), GRAPH);
  const config = join(dir, 'langgraph.json');
  await writeFile(config, JSON.stringify({ graphs: { own: './graph.mjs:graph' } }));
  return { dir, config };
}

const prefix = uniquePrefix('test-agent-own-core');
const redis = sharedRedis({ maxRetriesPerRequest: 2 });
let app: { dir: string; config: string };

beforeAll(async () => {
  app = await appWithOwnCore();
}, 60_000);

afterAll(async () => {
  await rm(app.dir, { recursive: true, force: true });
  await deleteByPrefix(redis, prefix);
  await redis.quit();
});

describe.each([
  ['memory', () => ({ store: new MemoryAgentStore(), checkpointer: new MemorySaver() })],
  [
    'redis',
    () => ({ store: new RedisAgentStore(redis, { prefix }), checkpointer: new RedisCheckpointer(redis, { prefix }) }),
  ],
])('an app with its own @langchain/core (%s store)', (_name, make) => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ configPath: app.config, ...make() });
  });
  afterAll(() => stack?.close());

  it('is really another copy: its chunks are not instances of the server’s classes', async () => {
    const mod = (await import(pathToFileURL(join(app.dir, 'graph.mjs')).href)) as { sample: unknown };
    expect(BaseMessageChunk.isInstance(mod.sample)).toBe(false);
  });

  it('streams its chat model token by token (messages/partial), each state’s messages complete after it', async () => {
    const c = sdk(stack.url, newKey()).client;
    const thread = await c.threads.create();
    const chunks = (await collect(
      c.runs.stream(thread.thread_id, 'own', { input: userInput('hi'), streamMode: ['messages', 'values'] }),
    )) as { event: string; data: any }[];
    const partials = chunks.filter((ch) => ch.event === 'messages/partial').map((ch) => ch.data[0].content as string);
    expect(partials.length).toBeGreaterThan(5);
    expect(partials.at(-1)).toBe('tokens of my own');
    expect(partials.every((p, i) => i === 0 || p.startsWith(partials[i - 1]!))).toBe(true);
    const complete = chunks.filter((ch) => ch.event === 'messages/complete').map((ch) => ch.data[0]);
    expect(complete.map((m) => [m.type, m.content])).toEqual([
      ['human', 'hi'],
      ['ai', 'tokens of my own'],
    ]);
    expect(chunks.findIndex((ch) => ch.event === 'messages/complete' && ch.data[0].type === 'ai')).toBeGreaterThan(
      chunks.findLastIndex((ch) => ch.event === 'values'),
    );
  });
});
