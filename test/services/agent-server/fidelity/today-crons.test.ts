import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, sdk, startStack, type Stack } from '../helpers.ts';

/** Issue 27, item 2: GET and PATCH /runs/crons/{id}, with `timezone` and `enabled`, as the official server. */
describe('crons: get, and update with timezone and enabled', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('reads a schedule in its timezone, answers GET /runs/crons/{id}, and updates timezone and enabled', async () => {
    const key = newKey();
    const { client } = sdk(stack.url, key);
    // 09:00 every day in Tokyo is 00:00 UTC.
    const cron = await client.crons.create('agent', { schedule: '0 9 * * *', timezone: 'Asia/Tokyo' });
    expect(cron).toMatchObject({ timezone: 'Asia/Tokyo', enabled: true });
    expect(new Date(cron.next_run_date).getUTCHours()).toBe(0);
    const res = await fetch(`${stack.url}/runs/crons/${cron.cron_id}`, { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ cron_id: cron.cron_id, timezone: 'Asia/Tokyo', schedule: '0 9 * * *' });
    const updated = await client.crons.update(cron.cron_id, { timezone: 'Europe/London', enabled: false });
    expect(updated).toMatchObject({ timezone: 'Europe/London', enabled: false });
    expect([8, 9]).toContain(new Date(updated.next_run_date!).getUTCHours()); // BST or GMT
    await expect(client.crons.update(cron.cron_id, { timezone: 'Mars/Olympus' })).rejects.toMatchObject({
      status: 422,
    });
    const unknown = await fetch(`${stack.url}/runs/crons/${crypto.randomUUID()}`, { headers: { 'x-api-key': key } });
    expect(unknown.status).toBe(404);
  });
});
