import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../src/log.ts';
import { channelBudget, FLOOD_REASON } from '../../../../src/services/revision-host/local/channel-budget.ts';
import { LogCapture } from '../../../helpers/gateway.ts';

function setup(maxIgnored = 5) {
  const logs = new LogCapture();
  let clock = 0;
  const floods: string[] = [];
  const channel = new PassThrough();
  channel.resume();
  const budget = channelBudget(channel, {
    log: createLogger('info', logs.stream),
    onFlood: (r) => floods.push(r),
    maxIgnored,
    windowMs: 10_000,
    now: () => clock,
  });
  return { logs, floods, channel, budget, tick: (ms: number) => (clock += ms) };
}

describe('the control channel budget', () => {
  it('logs the first ignored message at once and the rest of a burst as one counted line', async () => {
    const { logs, budget, channel } = setup(1000);
    for (let i = 0; i < 500; i++) budget.ignored('object', 'not a message of the protocol');
    expect(logs.lines().filter((l) => l.ignored !== undefined)).toHaveLength(1);
    channel.destroy(); // the rest is reported when the channel closes (or a second later)
    await new Promise((r) => setImmediate(r));
    const counts = logs.lines().map((l) => l.ignored);
    expect(counts).toEqual([1, 499]);
  });

  it('past the budget within the window: the flood reason, once, and the channel destroyed', () => {
    const { floods, budget, channel } = setup(5);
    for (let i = 0; i < 20; i++) budget.ignored('null', 'not a message of the protocol');
    expect(floods).toEqual([FLOOD_REASON]);
    expect(budget.flooded).toBe(true);
    expect(channel.destroyed).toBe(true);
  });

  it('a few ignored messages now and then never run it out', () => {
    const { floods, budget, tick } = setup(5);
    for (let i = 0; i < 20; i++) {
      budget.ignored('null', 'not a message of the protocol');
      tick(3000);
    }
    expect(floods).toEqual([]);
  });
});
