import { describe, expect, it } from 'vitest';
import { Broadcast } from '../../../../src/services/agent-server/runs/broadcast.ts';
import { collect } from '../helpers.ts';

const bounds = (items: number, weight = Infinity) => ({ items, weight, weigh: (s: string) => s.length });

describe('Broadcast', () => {
  it('gives a reader from now only what comes, and a resuming reader what it missed first', async () => {
    const b = new Broadcast<string>(bounds(100));
    b.push('1');
    b.push('2');
    const fromNow = b.subscribe();
    const resumed = b.subscribe(1);
    b.push('3');
    b.close();
    expect(await collect(fromNow)).toEqual(['3']);
    expect(await collect(resumed)).toEqual(['2', '3']);
    expect(b.count).toBe(3);
  });

  it('after the end, replays what is held and ends', async () => {
    const b = new Broadcast<string>(bounds(100));
    for (const s of ['a', 'b', 'c']) b.push(s);
    b.close();
    expect(await collect(b.subscribe(0))).toEqual(['a', 'b', 'c']);
    expect(await collect(b.subscribe(3))).toEqual([]);
    expect(await collect(b.subscribe())).toEqual([]);
  });

  it('holds the last items within both bounds, across many compactions', async () => {
    const b = new Broadcast<string>(bounds(10));
    for (let i = 1; i <= 5000; i++) b.push(String(i));
    b.close();
    expect(await collect(b.subscribe(0))).toEqual(Array.from({ length: 10 }, (_, i) => String(4991 + i)));
    expect(await collect(b.subscribe(4995))).toEqual(['4996', '4997', '4998', '4999', '5000']);

    const heavy = new Broadcast<string>(bounds(100, 10));
    for (const s of ['aaaa', 'bbbb', 'cccc', 'dddd']) heavy.push(s);
    expect(heavy.weight).toBe(8);
    heavy.push('x'.repeat(50)); // heavier than the bound alone: still held, as the last item
    heavy.close();
    expect(await collect(heavy.subscribe(0))).toEqual(['x'.repeat(50)]);
  });

  it('broadcasts sharing a pool hold at most its limit together, each dropping its own oldest; release gives the weight back', async () => {
    const pool = { used: 0, limit: 10 };
    const a = new Broadcast<string>({ ...bounds(100), pool });
    const b = new Broadcast<string>({ ...bounds(100), pool });
    for (const s of ['aaa', 'aaa', 'aaa']) a.push(s);
    expect(pool.used).toBe(9);
    b.push('bbb'); // 12: over, but a broadcast keeps at least its last item
    expect(pool.used).toBe(12);
    b.push('ccc'); // b drops its own 'bbb', never a's
    expect(pool.used).toBe(12);
    a.push('ddd'); // a drops its two oldest to get the pool back within 10
    expect(pool.used).toBe(9);
    a.close();
    b.close();
    expect(await collect(a.subscribe(0))).toEqual(['aaa', 'ddd']);
    expect(await collect(b.subscribe(0))).toEqual(['ccc']);
    a.release();
    b.release();
    expect(pool.used).toBe(0);
    expect(await collect(a.subscribe(0))).toEqual([]);
  });
});
