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

  describe('fair across tenants', () => {
    /** Jobs that record their start and end only when the test says so: no clock, no sleeps. */
    const controlled = (q: BuildQueue) => {
      const started: string[] = [];
      const gates = new Map<string, () => void>();
      const add = (id: string, tenant: string) =>
        q.add(id, `dep-${id}`, () => new Promise<void>((r) => (started.push(id), gates.set(id, r))), tenant);
      const finish = async (id: string) => {
        gates.get(id)!();
        await new Promise((r) => setImmediate(r));
      };
      return { started, add, finish };
    };

    it("one tenant's many builds hold at most perTenant slots; another tenant's build starts at once", () => {
      const q = new BuildQueue(2, undefined, { perTenant: 1 });
      const { started, add } = controlled(q);
      for (const id of ['a1', 'a2', 'a3', 'a4']) add(id, 'A');
      expect(started).toEqual(['a1']);
      add('b1', 'B');
      expect(started).toEqual(['a1', 'b1']);
      expect(q.size).toEqual({ running: 2, waiting: 3 });
    });

    it('a freed slot goes to the next tenant in turn (round robin), not to the one that just ran', async () => {
      const q = new BuildQueue(1, undefined, { perTenant: 1 });
      const { started, add, finish } = controlled(q);
      for (const id of ['a1', 'a2', 'a3']) add(id, 'A');
      add('b1', 'B');
      add('b2', 'B');
      add('c1', 'C');
      for (const id of ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']) await finish(id);
      expect(started).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
      await q.idle();
    });

    it('with perTenant 2, one tenant alone uses two slots; the third waits for a freed one', async () => {
      const q = new BuildQueue(3, undefined, { perTenant: 2 });
      const { started, add, finish } = controlled(q);
      for (const id of ['a1', 'a2', 'a3']) add(id, 'A');
      expect(started).toEqual(['a1', 'a2']);
      add('b1', 'B');
      expect(started).toEqual(['a1', 'a2', 'b1']);
      await finish('b1');
      expect(started).toEqual(['a1', 'a2', 'b1']);
      await finish('a1');
      expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
      await finish('a2');
      await finish('a3');
      await q.idle();
    });

    it('cancelling a waiting job keeps the others in turn', async () => {
      const q = new BuildQueue(1, undefined, { perTenant: 1 });
      const { started, add, finish } = controlled(q);
      add('a1', 'A');
      add('a2', 'A');
      add('b1', 'B');
      await q.cancel('b1');
      expect(q.has('b1')).toBe(false);
      await finish('a1');
      expect(started).toEqual(['a1', 'a2']);
      await finish('a2');
      await q.idle();
    });
  });

  it("a job whose tenant is still looked up is known and cancellable, then takes its tenant's turn", async () => {
    const q = new BuildQueue(2, () => {}, { perTenant: 1 });
    const ran: string[] = [];
    let resolveOrg!: (org: string) => void;
    const org = new Promise<string>((r) => (resolveOrg = r));
    const hold = gate();
    q.add('a1', 'd1', async () => (ran.push('a1'), await hold.p), 'org:a');
    q.add('a2', 'd2', async () => void ran.push('a2'), org); // another workspace of org a, looked up
    q.add('gone', 'd3', async () => void ran.push('gone'), new Promise<string>(() => {}));
    expect(q.has('a2')).toBe(true);
    expect(q.size).toEqual({ running: 1, waiting: 2 });
    await q.cancel('gone');
    expect(q.has('gone')).toBe(false);
    resolveOrg('org:a');
    await new Promise((r) => setTimeout(r, 0));
    expect(ran).toEqual(['a1']); // org a holds its one slot: a2 waits although a slot is free
    hold.open();
    await q.idle();
    expect(ran).toEqual(['a1', 'a2']);
  });
});
