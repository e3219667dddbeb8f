import { afterEach, describe, expect, it } from 'vitest';
import { shortestInterval } from '../../../../src/services/agent-server/api/crons/cron-interval.ts';
import type { AgentQuotas } from '../../../../src/services/agent-server/quotas.ts';
import { EXAMPLE_APP, newKey, sdk, startAgentServer, type RunningAgentServer } from '../helpers.ts';

/**
 * Issue 25, "thirty `* * * * * *` crons start 300 runs in 10 s with no client traffic": a schedule more frequent than
 * MIN_CRON_INTERVAL_SECONDS answers 422; MAX_CRONS per server and MAX_CRONS_PER_USER per custom-auth user answer 409
 * `Quota exceeded (crons…)`; all with the unmodified public client.
 */
let agent: RunningAgentServer | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
});

const start = async (quotas: Partial<AgentQuotas> = {}, configPath?: string) => {
  agent = await startAgentServer({ quotas, cronTickMs: 3_600_000, ...(configPath && { configPath }) });
  return agent;
};

describe('shortestInterval', () => {
  it.each([
    ['* * * * * *', 1],
    ['0,59 * * * * *', 1],
    ['30 * * * * *', 60],
    ['* * * * *', 60],
    ['*/5 * * * *', 300],
    ['0,1 * * * *', 60],
    ['0,30 0 * * *', 1800],
    ['0 0,23 * * *', 3600],
    ['59 23 * * *', 86_400],
    ['@hourly', 3600],
    ['2030-01-01T00:00:00', null],
  ])('%s: %s s', (schedule, seconds) => {
    expect(shortestInterval(schedule)).toBe(seconds);
  });
});

describe('MIN_CRON_INTERVAL_SECONDS', () => {
  it('the default (60 s) refuses a schedule with seconds that runs every second, at create and at update', async () => {
    const { client } = sdk((await start()).url, newKey());
    const refused = client.crons.create('agent', { schedule: '* * * * * *' });
    await expect(refused).rejects.toMatchObject({ status: 422 });
    await expect(refused).rejects.toThrow(/every 1 s; the minimum is 60 s \(MIN_CRON_INTERVAL_SECONDS/);
    expect(await client.crons.search({ limit: 100 })).toEqual([]);

    const cron = await client.crons.create('agent', { schedule: '* * * * *' });
    await expect(client.crons.update(cron.cron_id, { schedule: '*/10 * * * * *' })).rejects.toMatchObject({
      status: 422,
      message: expect.stringContaining('the minimum is 60 s'),
    });
    expect((await client.crons.search({ limit: 100 }))[0]!.schedule).toBe('* * * * *');
  });

  it('a larger minimum refuses every minute', async () => {
    const { client } = sdk((await start({ minCronIntervalSeconds: 300 })).url, newKey());
    await expect(client.crons.create('agent', { schedule: '* * * * *' })).rejects.toThrow(/the minimum is 300 s/);
    await expect(client.crons.create('agent', { schedule: '*/5 * * * *' })).resolves.toMatchObject({
      schedule: '*/5 * * * *',
    });
  });
});

describe('MAX_CRONS and MAX_CRONS_PER_USER', () => {
  it('the cron past MAX_CRONS answers 409 in the {detail} shape and stores nothing; a delete frees the slot', async () => {
    const server = await start({ maxCrons: 3 });
    const { client } = sdk(server.url, newKey());
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.crons.create('agent', { schedule: '0 3 * * *' })).cron_id);
    const res = await fetch(`${server.url}/runs/crons`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'agent', schedule: '0 4 * * *' }),
    });
    expect(res.status).toBe(409);
    const body = (await res.json()) as { detail: string };
    expect(Object.keys(body)).toEqual(['detail']);
    expect(body.detail).toMatch(/^Quota exceeded \(crons\): this server has 3 crons, the most MAX_CRONS \(3\) allows/);
    // 409 is not retried by the client: it fails at once.
    await expect(client.crons.create('agent', { schedule: '0 4 * * *' })).rejects.toMatchObject({ status: 409 });
    expect(await client.crons.count({})).toBe(3);

    await client.crons.delete(ids[0]!);
    await expect(client.crons.create('agent', { schedule: '0 4 * * *' })).resolves.toBeTruthy();
  });

  it('concurrent creates at the limit: exactly MAX_CRONS succeed', async () => {
    const { client } = sdk((await start({ maxCrons: 3 })).url, newKey());
    const answers = await Promise.allSettled(
      Array.from({ length: 8 }, () => client.crons.create('agent', { schedule: '0 3 * * *' })),
    );
    expect(answers.filter((a) => a.status === 'fulfilled')).toHaveLength(3);
    for (const a of answers.filter((x) => x.status === 'rejected')) expect(a.reason).toMatchObject({ status: 409 });
    expect(await client.crons.count({})).toBe(3);
  });

  it('with custom auth each user has MAX_CRONS_PER_USER of their own', async () => {
    const server = await start({ maxCronsPerUser: 2 }, EXAMPLE_APP);
    const as = (token: string) => sdk(server.url, newKey(), { authorization: `Bearer ${token}` }).client;
    const alice = as('alice-token');
    const bob = as('bob-token');
    const thread = async (c: typeof alice) => (await c.threads.create()).thread_id;
    const at = await thread(alice);
    const bt = await thread(bob);
    await alice.crons.createForThread(at, 'agent', { schedule: '0 3 * * *' });
    await alice.crons.createForThread(at, 'agent', { schedule: '0 4 * * *' });
    const refused = alice.crons.createForThread(at, 'agent', { schedule: '0 5 * * *' });
    await expect(refused).rejects.toMatchObject({ status: 409 });
    await expect(refused).rejects.toThrow(/Quota exceeded \(crons_per_user\): user alice has 2 crons/);
    await bob.crons.createForThread(bt, 'agent', { schedule: '0 3 * * *' });
    await bob.crons.createForThread(bt, 'agent', { schedule: '0 4 * * *' });
    await expect(bob.crons.createForThread(bt, 'agent', { schedule: '0 5 * * *' })).rejects.toMatchObject({
      status: 409,
    });
  });
});
