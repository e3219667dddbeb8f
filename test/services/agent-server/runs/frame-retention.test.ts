import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Broadcast } from '../../../../src/services/agent-server/runs/broadcast.ts';
import { FinishedRuns, runFrameBounds } from '../../../../src/services/agent-server/runs/frame-retention.ts';
import { frame, type Frame } from '../../../../src/services/agent-server/runs/frames.ts';
import type { RunHandle, RunOutcome } from '../../../../src/services/agent-server/runs/run-handle.ts';
import { collect } from '../helpers.ts';

/**
 * Issue 27, item 3: finished runs' frames are retained within a bound in bytes of memory (a frame costs its text and
 * its object), and a retained run keeps nothing of its execution reachable (under 400 runs a second the server's RSS
 * went from about 430 MB to 1 GB while the counted weight, text alone, stayed under its bound).
 */
function finishedRun(runId: string, frames: number, values: unknown): { handle: RunHandle; events: Broadcast<Frame> } {
  const events = new Broadcast<Frame>(runFrameBounds());
  for (let i = 0; i < frames; i++) events.push({ ...frame('messages', 'x'), id: String(i) });
  events.close();
  const done: Promise<RunOutcome> = Promise.resolve({ status: 'success', values, error: null });
  const handle: RunHandle = {
    runId,
    frames: events.subscribe(),
    recorded: Promise.resolve(),
    done,
    resumable: true,
    startedBy: 'ann',
    cancel: () => undefined,
    detach: () => undefined,
    join(seen) {
      const reader = events.subscribe(seen);
      return { frames: reader, leave: () => events.leave(reader) };
    },
  };
  return { handle, events };
}

describe('finished runs retained for resuming readers', () => {
  it('bounds what they hold in bytes of memory, frames of one character included', async () => {
    const finished = new FinishedRuns(60_000, 1024 * 1024);
    for (let i = 0; i < 20; i++) {
      const { handle, events } = finishedRun(`run-${i}`, 2000, null);
      finished.retain(handle, events);
    }
    // 2000 frames of "x" cost far more than their 2000 characters: each frame object counts.
    expect(finished.weight).toBeLessThanOrEqual(1024 * 1024);
    expect(finished.size).toBeLessThan(10);
    expect(finished.get('run-0')).toBeUndefined();
    const last = finished.get('run-19')!;
    expect((await collect(last.join(1998).frames)).map((f) => f.id)).toEqual(['1998', '1999']);
    finished.clear();
  });

  it('tells when a run is forgotten (its time is up, or the oldest beyond the bound), not when the server stops', async () => {
    const forgotten: string[] = [];
    const finished = new FinishedRuns(50, 1024 * 1024);
    for (let i = 0; i < 20; i++) {
      const { handle, events } = finishedRun(`run-${i}`, 2000, null);
      finished.retain(handle, events, () => forgotten.push(handle.runId));
    }
    // Beyond the bound: the oldest went at once, and said so.
    expect(forgotten.length).toBe(20 - finished.size);
    expect(forgotten[0]).toBe('run-0');
    await new Promise((r) => setTimeout(r, 200));
    expect(forgotten).toHaveLength(20); // the rest once their time was up
    const { handle, events } = finishedRun('run-at-stop', 10, null);
    finished.retain(handle, events, () => forgotten.push(handle.runId));
    finished.clear();
    expect(forgotten).not.toContain('run-at-stop');
  });

  it("keeps nothing of a finished run's execution reachable: its state values go", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const finished = new FinishedRuns(60_000, 64 * 1024 * 1024);
    // Made in a function of its own, so no variable of this test keeps the values alive.
    const ref = await (async () => {
      const values = { messages: new Array(1000).fill('a large state') };
      const { handle, events } = finishedRun('run-values', 10, values);
      await handle.done;
      finished.retain(handle, events);
      return new WeakRef(values);
    })();
    await new Promise((r) => setTimeout(r, 10));
    gc();
    await new Promise((r) => setTimeout(r, 10));
    gc();
    expect(ref.deref()).toBeUndefined();
    expect(finished.get('run-values')?.startedBy).toBe('ann');
    finished.clear();
  });
});
