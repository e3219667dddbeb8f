import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { pinnedAgent } from '../../../../src/services/agent-server/runs/webhooks.ts';
import { loadAgentServerSettings } from '../../../../src/services/agent-server/settings.ts';
import { eventually, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';

/**
 * Issue 27, item 2: webhooks on runs (`webhook`), through the edge with the unmodified client. As the official server
 * (langgraph-api `webhook.mts`): once the run has ended, `POST <webhook>` with the run, its final status and values.
 * With the outbound safety of repository URLs: loopback and private hosts only when WEBHOOK_HOSTS_ALLOWED names them.
 */
const TODAY_APP = fileURLToPath(new URL('../fixtures/today-app/langgraph.json', import.meta.url));

interface Call {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: Record<string, unknown>;
}

/** A webhook receiver on port 0: `answer` decides each call's reply (by its number, from 1); null leaves it hanging. */
class Receiver {
  readonly calls: Call[] = [];
  answer: (n: number) => number | null = () => 200;
  private readonly server: Server;
  private readonly hanging: ServerResponse[] = [];

  constructor() {
    this.server = createServer((req, res) => void this.take(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async take(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    this.calls.push({
      method: req.method ?? '',
      path: req.url ?? '',
      contentType: req.headers['content-type'],
      body: JSON.parse(text) as Record<string, unknown>,
    });
    const status = this.answer(this.calls.length);
    if (status === null) this.hanging.push(res);
    else res.writeHead(status).end(status < 300 ? 'ok' : 'no');
  }

  reset(): void {
    this.calls.length = 0;
    this.answer = () => 200;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const lastMessage = (values: unknown) => {
  const messages = (values as { messages?: { content?: unknown }[] } | null)?.messages ?? [];
  return messages.at(-1)?.content;
};

describe('webhooks on runs', () => {
  let stack: Stack;
  let strict: Stack;
  const receiver = new Receiver();
  let hook = '';
  beforeAll(async () => {
    hook = `${await receiver.start()}/hooks/run?token=t0k3n`;
    // Allowed here only because the test says so (the receiver is on loopback); retries come fast for the test.
    stack = await startStack({
      configPath: TODAY_APP,
      cronTickMs: 3_600_000,
      webhooks: { allowed: ['127.0.0.1'], retryDelaysMs: [50, 100, 200] },
    });
    strict = await startStack({ configPath: TODAY_APP });
  });
  afterEach(() => receiver.reset());
  afterAll(async () => {
    await stack.close();
    await strict.close();
    await receiver.close();
  });
  const as = (s: Stack) => sdk(s.url, newKey(), { 'x-user': 'ann' }).client;

  it('calls the webhook once, after a threaded run, with the run, its final status and values', async () => {
    const client = as(stack);
    const thread = await client.threads.create();
    const result = await client.runs.wait(thread.thread_id, 'slow', {
      input: userInput('hi'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    });
    expect(lastMessage(result)).toBe('done');
    const call = await eventually(async () => receiver.calls[0]);
    expect(call).toMatchObject({ method: 'POST', path: '/hooks/run?token=t0k3n', contentType: 'application/json' });
    expect(call.body).toMatchObject({
      thread_id: thread.thread_id,
      assistant_id: expect.any(String),
      status: 'success',
      run_started_at: expect.any(String),
      run_ended_at: expect.any(String),
      webhook_sent_at: expect.any(String),
      kwargs: expect.objectContaining({ webhook: hook }),
    });
    expect(lastMessage(call.body.values)).toBe('done');
    const run = await client.runs.get(thread.thread_id, String(call.body.run_id));
    expect(run.status).toBe('success');
    // Once: a later run without a webhook calls nothing more.
    await client.runs.wait(thread.thread_id, 'slow', {
      input: userInput('again'),
      config: { configurable: { wait_ms: 1 } },
    });
    expect(receiver.calls).toHaveLength(1);
  });

  it('calls it after threadless runs (wait and stream) and after a cron run', async () => {
    const client = as(stack);
    await client.runs.wait(null, 'slow', {
      input: userInput('a'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    });
    for await (const _ of client.runs.stream(null, 'slow', {
      input: userInput('b'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    }));
    const threaded = await eventually(async () => (receiver.calls.length === 2 ? receiver.calls : undefined));
    expect(threaded.map((c) => c.body.status)).toEqual(['success', 'success']);
    expect(threaded.map((c) => lastMessage(c.body.values))).toEqual(['done', 'done']);

    const thread = await client.threads.create();
    await client.crons.createForThread(thread.thread_id, 'slow', {
      schedule: '* * * * *',
      input: userInput('scheduled'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    });
    await stack.agent.server.crons.fireDue(new Date(Date.now() + 120_000));
    const cronCall = await eventually(async () => receiver.calls[2]);
    expect(cronCall.body).toMatchObject({ thread_id: thread.thread_id, status: 'success' });
  });

  it('refuses a loopback, private or metadata webhook with 422 naming why, unless WEBHOOK_HOSTS_ALLOWED allows it', async () => {
    const client = as(strict);
    const thread = await client.threads.create();
    for (const url of [hook, 'http://10.1.2.3/h', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:9/h']) {
      const refused = await client.runs.create(thread.thread_id, 'slow', { input: userInput('x'), webhook: url }).then(
        () => null,
        (err: { status?: number; message?: string }) => err,
      );
      expect(refused).toMatchObject({ status: 422 });
      expect(refused?.message).toMatch(/webhook: .*loopback, private or reserved address.*WEBHOOK_HOSTS_ALLOWED/);
    }
    const notHttp = await client.runs.wait(null, 'slow', { input: userInput('x'), webhook: 'file:///etc/passwd' }).then(
      () => null,
      (err: { status?: number; message?: string }) => err,
    );
    expect(notHttp).toMatchObject({ status: 422, message: expect.stringContaining('http://') });
    const cron = await client.crons
      .createForThread(thread.thread_id, 'slow', { schedule: '* * * * *', webhook: hook })
      .then(
        () => null,
        (err: { status?: number }) => err,
      );
    expect(cron).toMatchObject({ status: 422 });
    // Nothing ran, nothing was called.
    expect(await client.runs.list(thread.thread_id)).toHaveLength(0);
    expect(receiver.calls).toHaveLength(0);
  });

  it('retries a webhook that fails twice, until it answers 2xx', async () => {
    receiver.answer = (n) => (n <= 2 ? 503 : 200);
    const client = as(stack);
    await client.runs.wait(null, 'slow', {
      input: userInput('x'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    });
    await eventually(async () => (receiver.calls.length >= 3 ? true : undefined));
    const runIds = new Set(receiver.calls.map((c) => c.body.run_id));
    expect(runIds.size).toBe(1); // the same run, three times
    await new Promise((r) => setTimeout(r, 600)); // longer than every retry delay together: no fourth call
    expect(receiver.calls).toHaveLength(3);
  });

  it('does not wait for a webhook that hangs: the run ends and the thread takes its next run', async () => {
    receiver.answer = () => null;
    const client = as(stack);
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, 'slow', {
      input: userInput('one'),
      config: { configurable: { wait_ms: 1 } },
      webhook: hook,
    });
    await eventually(async () => receiver.calls[0]);
    // The call hangs; the run is over and recorded, and the thread is free.
    const second = await client.runs.wait(thread.thread_id, 'slow', {
      input: userInput('two'),
      config: { configurable: { wait_ms: 1 } },
    });
    expect(lastMessage(second)).toBe('done');
    const runs = await client.runs.list(thread.thread_id);
    expect(runs.map((r) => r.status)).toEqual(['success', 'success']);
    expect((await client.threads.get(thread.thread_id)).status).toBe('idle');
  });

  it('connects to the address it checked, not to what DNS answers at the call (no rebinding)', async () => {
    // `hook.invalid` resolves nowhere: the call reaches the receiver only through the pinned address.
    const port = new URL(hook).port;
    const agent = pinnedAgent({ url: new URL(`http://hook.invalid:${port}/`), addresses: ['127.0.0.1'] }, 5_000);
    try {
      const answer = await request(`http://hook.invalid:${port}/pinned`, {
        method: 'POST',
        body: '{"pinned":true}',
        dispatcher: agent,
      });
      await answer.body.dump();
      expect(answer.statusCode).toBe(200);
      expect(receiver.calls[0]).toMatchObject({ path: '/pinned', body: { pinned: true } });
    } finally {
      await agent.close();
    }
  });

  it('reads WEBHOOK_HOSTS_ALLOWED as REPO_HOSTS_ALLOWED: hosts, host:port, addresses, CIDRs; a bad entry is named', () => {
    const entries = ['hooks.internal', 'hooks.internal:8443', '127.0.0.1', '10.0.0.0/8', 'fd00::/8'];
    expect(loadAgentServerSettings({ WEBHOOK_HOSTS_ALLOWED: entries.join(',') }).webhookHostsAllowed).toEqual(entries);
    expect(() => loadAgentServerSettings({ WEBHOOK_HOSTS_ALLOWED: '10.0.0.0/99' })).toThrow(/WEBHOOK_HOSTS_ALLOWED/);
  });
});
