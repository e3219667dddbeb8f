import { describe, expect, it } from 'vitest';
import { BuildQueue } from '../../../src/services/control-plane/builds/build-queue.ts';

describe('BuildQueue', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { p, open };
  };

  it('runs at most `concurrency` jobs; the rest wait their turn in order', async () => {
    const q = new BuildQueue(2);
    const order: string[] = [];
    const gates = [gate(), gate(), gate()];
    ['a', 'b', 'c'].forEach((id, i) => q.add(id, 'g', async () => (order.push(id), await gates[i]!.p)));
    expect(q.size).toEqual({ running: 2, waiting: 1 });
    expect(order).toEqual(['a', 'b']);
    gates[0]!.open();
    await new Promise((r) => setTimeout(r, 0));
    expect(order).toEqual(['a', 'b', 'c']);
    gates[1]!.open();
    gates[2]!.open();
    await q.idle();
    expect(q.size).toEqual({ running: 0, waiting: 0 });
  });

  it('cancel drops a waiting job and aborts a running one, waiting for it to stop', async () => {
    const q = new BuildQueue(1);
    let aborted = false;
    let stopped = false;
    q.add('run', 'dep-1', async (signal) => {
      await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      aborted = signal.aborted;
      await new Promise((r) => setTimeout(r, 20));
      stopped = true;
    });
    let ranWaiting = false;
    q.add('wait', 'dep-1', async () => void (ranWaiting = true));
    q.add('other', 'dep-2', async () => {});
    expect(q.runningIn('dep-1')).toBe(1);
    await q.cancelGroup('dep-1');
    expect(aborted && stopped).toBe(true);
    expect(q.has('run')).toBe(false);
    await q.idle();
    expect(ranWaiting).toBe(false);
    expect(q.has('other')).toBe(false);
  });

  it('reports a failing job (not a cancelled one); close refuses new jobs', async () => {
    const errors: string[] = [];
    const q = new BuildQueue(1, (err, id) => errors.push(`${id}: ${(err as Error).message}`));
    q.add('bad', 'g', async () => {
      throw new Error('broken');
    });
    q.add('bad', 'g', async () => {}); // same id while queued: ignored
    await q.idle();
    expect(errors).toEqual(['bad: broken']);
    q.add(
      'long',
      'g',
      (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    await q.close();
    expect(errors).toEqual(['bad: broken']);
    q.add('late', 'g', async () => {});
    expect(q.has('late')).toBe(false);
  });
});
