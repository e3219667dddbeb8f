import { readFileSync } from 'node:fs';
import { Client } from '@langchain/langgraph-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

/**
 * Finding "the in-flight guard is walked around": the run guards counted only requests with an API key or a user id,
 * so requests with a bearer token alone, or with a fresh `x-user-id` each, started runs without bound (300 in 3 s in
 * the gateway's process), and a WebSocket that started runs and closed gave their slots back at once (170 runs on one
 * key whose limit is 100). Now a per-client-address guard counts every run-starting request, and a run started inside
 * a socket holds its slot until the run ends, not until the socket closes.
 *
 * The shipped guards, as shipped; only the catch-all `public` rule (100 per minute per address) is widened, so that
 * more requests than the in-flight guard admits reach it within the test.
 */
const SHIPPED = readFileSync(new URL('../../rules/us.yaml', import.meta.url), 'utf8');
const RULES = SHIPPED.replace(
  '{ by: ip, count: 100, per: 60s, category: Public (catch-all) }',
  '{ by: ip, count: 100000, per: 60s, category: Public (catch-all) }',
);
const PER_IP = 100;
const PER_USER = 10;
/** The example app's model waits this long per token: a run lasts well beyond the test. */
const SLOW = { configurable: { token_delay_ms: 3000 } };
const input = { messages: [{ role: 'user', content: 'a long answer, please' }] };

let gw: TestGateway | undefined;
let rules: { dir: string; remove(): void } | undefined;
afterEach(async () => {
  await gw?.close();
  rules?.remove();
});

async function start(): Promise<TestGateway> {
  expect(RULES).not.toBe(SHIPPED);
  rules = rulesDir(RULES);
  gw = await startTestGateway({ RULES_DIR: rules.dir, LOG_LEVEL: 'warn' });
  return gw;
}

/** Starts `n` background runs, ten at a time; answers each status and the guard of each 429. */
async function startRuns(url: string, n: number, headers: (i: number) => Record<string, string>) {
  const answers: { status: number; guard?: string }[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = Array.from({ length: Math.min(10, n - i) }, async (_, j) => {
      const res = await fetch(`${url}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers(i + j) },
        body: JSON.stringify({ assistant_id: 'agent', input, config: SLOW }),
      });
      const body = (await res.json()) as { guard?: string };
      return { status: res.status, ...(res.status === 429 && { guard: body.guard }) };
    });
    answers.push(...(await Promise.all(batch)));
  }
  return answers;
}

const count = (answers: { status: number }[], status: number) => answers.filter((a) => a.status === status).length;

describe('runs started past the in-flight guard', { timeout: 120_000 }, () => {
  it('with a bearer token alone: counted by client address', async () => {
    const g = await start();
    const answers = await startRuns(g.url, PER_IP + 10, () => ({ authorization: 'Bearer alice-token' }));
    expect(count(answers, 200)).toBe(PER_IP);
    expect(answers.filter((a) => a.status === 429).map((a) => a.guard)).toEqual(
      Array(10).fill('runs-in-flight-per-ip'),
    );
  });

  it('with a fresh x-user-id each: bounded per client address all the same', async () => {
    const g = await start();
    const answers = await startRuns(g.url, PER_IP + 10, (i) => ({
      authorization: 'Bearer alice-token',
      'x-user-id': `user-${i}`,
    }));
    expect(count(answers, 200)).toBe(PER_IP);
    expect(count(answers, 429)).toBe(10);
  });

  it('started inside a WebSocket that then closes: the slot is held until the run ends', async () => {
    const g = await start();
    const results: ('started' | number)[] = [];
    for (let i = 0; i < PER_USER + 3; i++) {
      const client = new Client({ apiUrl: g.url, apiKey: null });
      const thread = client.threads.stream({
        assistantId: 'agent',
        transport: 'websocket',
        maxReconnectAttempts: 0,
        webSocketFactory: (url: string) =>
          new WebSocket(url, {
            headers: { authorization: 'Bearer alice-token', 'x-user-id': 'one-user' },
          }) as unknown as globalThis.WebSocket,
      });
      try {
        await thread.run.start({ input, config: SLOW });
        results.push('started');
      } catch (err) {
        results.push((err as { status?: number }).status ?? -1);
      }
      await thread.close();
    }
    expect(results.filter((r) => r === 'started')).toHaveLength(PER_USER);
    expect(results.slice(PER_USER)).toEqual([429, 429, 429]);
  });
});
