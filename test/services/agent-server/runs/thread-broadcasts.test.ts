import { describe, expect, it } from 'vitest';
import { frame, type Frame } from '../../../../src/services/agent-server/runs/frames.ts';
import { ThreadStreams, type ThreadFrame } from '../../../../src/services/agent-server/runs/thread-broadcasts.ts';

const IDLE_MS = 30;
const make = () => {
  const pool = { used: 0, limit: 1024 * 1024 };
  const streams = new ThreadStreams(
    { items: 100, weight: 64 * 1024, weigh: (f: ThreadFrame) => f.frame.data.length, pool },
    IDLE_MS,
  );
  return { streams, pool };
};

/** The next `n` frames of an endless reader. */
async function take(frames: AsyncIterable<Frame>, n: number): Promise<Frame[]> {
  const out: Frame[] = [];
  if (n === 0) return out;
  for await (const f of frames) if (out.push(f) === n) break;
  return out;
}

describe('ThreadStreams', () => {
  it('numbers frames per thread and gives each reader the modes it asked for', async () => {
    const { streams } = make();
    streams.runStarted('t');
    const all = streams.follow('t', ['run_modes']);
    const lifecycle = streams.follow('t', ['lifecycle']);
    const state = streams.follow('t', ['state_update']);
    streams.publish('t', frame('metadata', { run_id: 'r' }));
    streams.publish('t', frame('updates', { a: 1 }));
    streams.publish('t', frame('values', { v: 1 }), ['state_update']);
    streams.publish('t', frame('run_done', { run_id: 'r', status: 'success' }));
    streams.publish('other', frame('updates', {})); // nobody there: dropped
    expect((await take(all.frames, 3)).map((f) => [f.id, f.event])).toEqual([
      ['0', 'metadata'],
      ['1', 'updates'],
      ['3', 'run_done'],
    ]);
    expect((await take(lifecycle.frames, 2)).map((f) => f.event)).toEqual(['metadata', 'run_done']);
    expect(await take(state.frames, 1)).toEqual([{ event: 'values', data: '{"v":1}', id: '2' }]);
  });

  it('holds a thread while a run or a reader is on it, then for the idle time; then lets it go', async () => {
    const { streams, pool } = make();
    streams.runStarted('t');
    streams.publish('t', frame('metadata', { run_id: 'r' }));
    streams.runEnded('t');
    // Within the idle time: a reader from the start gets what was held.
    const reader = streams.follow('t', ['run_modes'], 0);
    expect((await take(reader.frames, 1))[0]!.id).toBe('0');
    reader.leave();
    await new Promise((r) => setTimeout(r, IDLE_MS * 4));
    // Gone: a new reader starts a new stream, numbered from 0 again, and the pool got its weight back.
    expect(pool.used).toBe(0);
    const later = streams.follow('t', ['run_modes'], 0);
    streams.runStarted('t');
    streams.publish('t', frame('metadata', { run_id: 'r2' }));
    expect(await take(later.frames, 1)).toEqual([{ event: 'metadata', data: '{"run_id":"r2"}', id: '0' }]);
    streams.close();
  });

  it('end() ends every reader of the thread', async () => {
    const { streams, pool } = make();
    const reader = streams.follow('t', ['run_modes']);
    streams.runStarted('t');
    streams.publish('t', frame('metadata', {}));
    streams.end('t');
    const seen: Frame[] = [];
    for await (const f of reader.frames) seen.push(f);
    expect(seen.map((f) => f.event)).toEqual(['metadata']);
    expect(pool.used).toBe(0);
  });
});
