import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { rulesDir } from '../helpers/gateway.ts';
import { SHARED_REDIS_URL } from '../helpers/shared-redis.ts';
import { spawnGateway, type SpawnedGateway } from '../helpers/spawn-gateway.ts';

/**
 * Issue 35, item 6: with WORKERS=2 and Redis, one `threads.stream` run in 31 was seen to lose the first of its two
 * messages (the example app's greeting, which its first node returns before the model streams). The real program
 * (two edge workers, the bundled Agent Server with the example app, the shared Redis under the run's prefixes), the
 * SDK 1.15 quick start run 100 times, a few at once so the streams of several runs and both workers interleave: every
 * run must read both messages, in order. (STREAM_RUNS and STREAM_AT_ONCE run it harder by hand: 400 runs, 12 at once,
 * lost nothing either.)
 */

const RUNS = Number(process.env.STREAM_RUNS ?? 100);
const AT_ONCE = Number(process.env.STREAM_AT_ONCE ?? 4);

const rules = rulesDir(`
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`);
let gateway: SpawnedGateway;

beforeAll(async () => {
  gateway = await spawnGateway(
    {
      WORKERS: '2',
      REDIS_URL: SHARED_REDIS_URL,
      IDENTITY_SECRET: 'threads-stream-workers-test',
      RULES_DIR: rules.dir,
      NODE_ENV: 'development',
    },
    90_000,
  );
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  rules.remove();
});

async function quickStart(i: number, transport: 'sse' | 'websocket'): Promise<string[]> {
  const headers = { authorization: 'Bearer alice-token' };
  // A WebSocket client sends no default headers (SDK 1.15 refuses them): its factory does.
  const client =
    transport === 'sse'
      ? new Client({ apiUrl: gateway.url, defaultHeaders: headers })
      : new Client({ apiUrl: gateway.url, apiKey: null });
  const options: Record<string, unknown> =
    transport === 'sse'
      ? {}
      : { transport: 'websocket', webSocketFactory: (url: string) => new WebSocket(url, { headers }) };
  const thread = client.threads.stream({ assistantId: 'agent', ...options });
  await thread.run.start({ input: { messages: [{ role: 'user', content: `run ${i}` }] } });
  const texts: string[] = [];
  for await (const message of thread.messages) texts.push(await message.text);
  await thread.close();
  return texts;
}

describe.each(['sse', 'websocket'] as const)('threads.stream (%s) on WORKERS=2 with Redis', (transport) => {
  it(`reads both messages of every run, ${RUNS} runs, ${AT_ONCE} at once`, async () => {
    const lost: { run: number; texts: string[] }[] = [];
    let next = 0;
    const worker = async () => {
      while (next < RUNS) {
        const i = next++;
        const texts = await quickStart(i, transport);
        const whole = texts.length === 2 && texts[0] === 'Hello, alice!' && texts[1]!.includes(`run ${i}`);
        if (!whole) lost.push({ run: i, texts });
      }
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
    expect(lost).toEqual([]);
  }, 600_000);
});
