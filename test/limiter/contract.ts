import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SLOT_RETRY_MS, type Bucket, type Limiter, type LimitOutcome } from '../../src/limiter/types.ts';

/**
 * The Limiter contract, run by every backend (memory, Redis, Redis Cluster),
 * like hono's routers share `common.case.test.ts`.
 *
 * With an injectable clock (`advance`) every value is checked exactly. On a
 * real clock (Redis `TIME`), time passes between the calls: the suite uses
 * hour-long periods where it checks values, so refill during a test is
 * negligible, and a value may only be lower than the exact one by the
 * elapsed time (bounded by SLACK_MS); refill itself is checked with short
 * periods and short real waits.
 */

export interface LimiterHarness {
  readonly limiter: Limiter;
  /** A key unique to this test (and to this run): the harness removes such keys in `close`. */
  key(name: string): string;
  /** Moves the limiter's clock forward. Absent: the clock is real and the suite sleeps. */
  advance?(ms: number): void;
  /** The store's remaining time to live of a key in ms (Redis PTTL). Absent: no TTLs to check. */
  pttl?(key: string): Promise<number>;
  /**
   * True when one call's buckets may live on different nodes: across slots, concurrent calls may deny more than needed.
   */
  readonly splitsCalls?: boolean;
  /**
   * Another limiter on the same store, as another edge would have, whose in-flight leases last `leaseMs`; closing it
   * stops its renewals as a killed edge would. Absent: the store is one process's (memory), nothing to expire.
   */
  peer?(leaseMs: number): Limiter;
  close(): Promise<void>;
}

const HOUR = 3600;
const SLACK_MS = 1000;

export function limiterContract(name: string, make: () => Promise<LimiterHarness>): void {
  describe(`Limiter contract: ${name}`, () => {
    let h: LimiterHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.close();
    });

    const bucket = (key: string, capacity: number, perSeconds: number): Bucket => ({
      key: h.key(key),
      capacity,
      perSeconds,
    });
    const consume = (...buckets: Bucket[]): Promise<LimitOutcome> => h.limiter.consume(buckets);
    /** `actual` is `expected`, or (real clock) up to SLACK_MS lower for the time the test took. */
    const near = (actual: number, expected: number) => {
      if (h.advance) return expect(actual).toBe(expected);
      expect(actual).toBeLessThanOrEqual(expected);
      expect(actual).toBeGreaterThanOrEqual(expected - SLACK_MS);
    };
    const wait = async (ms: number) => (h.advance ? h.advance(ms) : new Promise((r) => setTimeout(r, ms)));

    it('allows an empty call without touching the store', async () => {
      expect(await h.limiter.consume([])).toEqual({ allowed: true, buckets: [], retryAfterMs: 0 });
    });

    it('a fresh bucket allows `capacity` calls, counting down, then denies', async () => {
      const b = bucket('a', 5, HOUR);
      for (let i = 0; i < 5; i++) {
        const out = await consume(b);
        expect(out.allowed).toBe(true);
        expect(out.retryAfterMs).toBe(0);
        expect(out.buckets[0]!.remaining).toBe(4 - i);
      }
      const denied = await consume(b);
      expect(denied.allowed).toBe(false);
      expect(denied.buckets[0]!.remaining).toBe(0);
      near(denied.buckets[0]!.msToToken, 720_000); // one token per 3600 s / 5
      near(denied.buckets[0]!.msToNextToken, 720_000);
      near(denied.retryAfterMs, 720_000);
    });

    it('reports ms to the next token and to a token', async () => {
      const b = bucket('a', 4, HOUR); // one token per 900 s
      const first = (await consume(b)).buckets[0]!;
      expect(first.remaining).toBe(3);
      expect(first.msToToken).toBe(0);
      near(first.msToNextToken, 900_000);
      if (h.advance) {
        h.advance(300_000); // 3 1/3 tokens; taking one leaves 2 1/3
        expect((await consume(b)).buckets[0]).toEqual({ remaining: 2, msToNextToken: 600_000, msToToken: 0 });
        await consume(b);
        h.advance(1); // 1 1/3 + a bit: after the take, 1/3 + a bit
        expect((await consume(b)).buckets[0]).toEqual({ remaining: 0, msToNextToken: 599_999, msToToken: 599_999 });
      }
    });

    it('refills continuously at capacity/per, up to capacity', async () => {
      const b = bucket('a', 10, 1); // one token per 100 ms
      const start = performance.now();
      let drained = 0;
      let denied: LimitOutcome;
      while ((denied = await consume(b)).allowed && drained < 30) drained++;
      // A real clock may refill a token while a slow machine drains the bucket.
      if (h.advance) expect(drained).toBe(10);
      else expect(drained).toBeLessThanOrEqual(10 + Math.floor((performance.now() - start) / 100) + 1);
      expect(drained).toBeGreaterThanOrEqual(10);
      expect(denied.allowed).toBe(false);
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(100);

      await wait(250);
      let refilled = 0;
      while ((await consume(b)).allowed && refilled < 20) refilled++;
      if (h.advance) expect(refilled).toBe(2);
      else {
        expect(refilled).toBeGreaterThanOrEqual(2);
        expect(drained + refilled).toBeLessThanOrEqual(10 + Math.floor((performance.now() - start) / 100) + 1);
      }

      await wait(1050); // longer than the period: full, and never more than full
      const full = await consume(b);
      expect(full.allowed).toBe(true);
      expect(full.buckets[0]!.remaining).toBe(9);
    });

    it('all-or-nothing: when one bucket is empty, none is charged', async () => {
      const a = bucket('a', 1, HOUR);
      const b = bucket('b', 5, HOUR);
      const c = bucket('c', 3, HOUR);
      expect((await consume(a, b)).buckets.map((x) => x.remaining)).toEqual([0, 4]);

      const denied = await consume(a, b, c);
      expect(denied.allowed).toBe(false);
      expect(denied.buckets.map((x) => x.remaining)).toEqual([0, 4, 3]);
      near(denied.buckets[0]!.msToToken, 3_600_000);
      expect(denied.buckets[1]!.msToToken).toBe(0);
      near(denied.buckets[1]!.msToNextToken, 720_000);
      expect(denied.buckets[2]).toEqual({ remaining: 3, msToNextToken: 0, msToToken: 0 }); // full, untouched
      near(denied.retryAfterMs, 3_600_000);

      expect((await consume(b)).buckets[0]!.remaining).toBe(3);
      expect((await consume(c)).buckets[0]!.remaining).toBe(2);
    });

    it('retryAfterMs is the longest wait among the empty buckets', async () => {
      const minute = bucket('minute', 1, 60);
      const hour = bucket('hour', 1, HOUR);
      await consume(minute);
      await consume(hour);
      const denied = await consume(minute, hour);
      near(denied.buckets[0]!.msToToken, 60_000);
      near(denied.retryAfterMs, 3_600_000);
    });

    it('keys are independent', async () => {
      const a = bucket('a', 2, HOUR);
      await consume(a);
      await consume(a);
      expect((await consume(a)).allowed).toBe(false);
      const other = await consume(bucket('b', 2, HOUR));
      expect(other.allowed).toBe(true);
      expect(other.buckets[0]!.remaining).toBe(1);
    });

    it('a key named twice in one call is charged twice', async () => {
      const a = bucket('a', 3, HOUR);
      expect(await consume(a, a)).toMatchObject({ allowed: true, buckets: [{ remaining: 1 }, { remaining: 1 }] });
      expect(await consume(a, a)).toMatchObject({ allowed: false, buckets: [{ remaining: 1 }, { remaining: 1 }] });
      expect((await consume(a)).buckets[0]!.remaining).toBe(0);
    });

    it('concurrent calls on one bucket admit exactly `capacity`', async () => {
      const b = bucket('a', 20, HOUR); // refill during the test: one token per 180 s, none
      const outs = await Promise.all(Array.from({ length: 60 }, () => consume(b)));
      const admitted = outs.filter((o) => o.allowed);
      expect(admitted).toHaveLength(20);
      // Each admitted call saw its own state: the remainders are 19..0, once each.
      expect(admitted.map((o) => o.buckets[0]!.remaining).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 20 }, (_, i) => i),
      );
    });

    it('concurrent calls on two buckets charge both buckets equally, never more than the smaller allows', async () => {
      const a = bucket('a', 10, HOUR);
      const b = bucket('b', 20, HOUR);
      const outs = await Promise.all(Array.from({ length: 30 }, () => consume(a, b)));
      const admitted = outs.filter((o) => o.allowed).length;
      if (h.splitsCalls) expect(admitted).toBeGreaterThanOrEqual(1);
      else expect(admitted).toBe(10);
      expect(admitted).toBeLessThanOrEqual(10);
      // Denied calls took nothing (across slots: they gave back what they took).
      expect((await consume(b)).buckets[0]!.remaining).toBe(20 - admitted - 1);
      expect((await consume(a)).buckets[0]!.remaining).toBe(Math.max(0, 10 - admitted - 1));
    });

    describe('in-flight slots', () => {
      const slots = (key: string, n: number): Bucket => ({
        key: h.key(key),
        capacity: n,
        perSeconds: 0,
        inFlight: true,
      });

      it('admits N calls, denies the N+1st (no free slot, try again in a second), frees a slot on release', async () => {
        const s = slots('s', 3);
        const held = [];
        for (let i = 0; i < 3; i++) {
          const out = await consume(s);
          expect(out.allowed).toBe(true);
          expect(out.buckets[0]!.remaining).toBe(2 - i);
          expect(out.lease).toBeDefined();
          held.push(out.lease!);
        }
        const denied = await consume(s);
        expect(denied).toMatchObject({ allowed: false, retryAfterMs: SLOT_RETRY_MS });
        expect(denied.buckets[0]).toEqual({ remaining: 0, msToNextToken: SLOT_RETRY_MS, msToToken: SLOT_RETRY_MS });
        expect(denied.lease).toBeUndefined();
        await held[0]!.release();
        await held[0]!.release(); // twice: still one slot
        const again = await consume(s);
        expect(again.allowed).toBe(true);
        expect(again.buckets[0]!.remaining).toBe(0);
        expect((await consume(s)).allowed).toBe(false);
        for (const l of [...held.slice(1), again.lease!]) await l.release();
        expect((await consume(s)).buckets[0]!.remaining).toBe(2);
      });

      it('a denied call takes no slot and no token: slots and tokens are one all-or-nothing call', async () => {
        const s = slots('s', 1);
        const rate = bucket('r', 2, HOUR);
        const first = await consume(s, rate); // slot 1/1, token 1/2
        expect(first.allowed).toBe(true);
        const noSlot = await consume(s, rate);
        expect(noSlot.allowed).toBe(false);
        expect(noSlot.buckets[1]!.remaining).toBe(1); // the token stays
        await first.lease!.release();
        const empty = bucket('e', 1, HOUR);
        await consume(empty);
        const noToken = await consume(s, empty);
        expect(noToken.allowed).toBe(false);
        expect(noToken.buckets[0]!.remaining).toBe(1); // the slot stays free
        const ok = await consume(s, rate);
        expect(ok.allowed).toBe(true);
        expect(ok.buckets.map((b) => b.remaining)).toEqual([0, 0]);
        await ok.lease!.release();
      });

      it('a call without in-flight buckets carries no lease', async () => {
        expect((await consume(bucket('plain', 5, HOUR))).lease).toBeUndefined();
      });

      it('a burst of 3N concurrent calls admits exactly N', async () => {
        const s = slots('burst', 5);
        const outs = await Promise.all(Array.from({ length: 15 }, () => consume(s)));
        const admitted = outs.filter((o) => o.allowed);
        // Across cluster slots a refund race may deny more, never admit more; with one bucket there is no split.
        expect(admitted).toHaveLength(5);
        await Promise.all(admitted.map((o) => o.lease!.release()));
        expect((await consume(s)).buckets[0]!.remaining).toBe(4);
      });

      it('a live holder renews its slots; a dead one’s come back once its lease has passed', async () => {
        if (!h.peer) return;
        const leaseMs = 400;
        const s = slots('lease', 2);
        const edge = h.peer(leaseMs);
        expect((await edge.consume([s])).allowed).toBe(true);
        expect((await edge.consume([s])).allowed).toBe(true);
        await wait(leaseMs * 2.5); // renewed every third of the lease: still held
        expect((await consume(s)).allowed).toBe(false);
        await edge.close(); // the edge dies: nobody renews
        expect((await consume(s)).allowed).toBe(false);
        await wait(leaseMs + 200);
        const back = await consume(s);
        expect(back.allowed).toBe(true);
        expect(back.buckets[0]!.remaining).toBe(1);
        await back.lease!.release();
      });
    });

    it('stored keys expire when their bucket would be full again', async () => {
      if (!h.pttl) return;
      const key = h.key('a');
      const b: Bucket = { key, capacity: 10, perSeconds: 60 }; // one token per 6 s
      expect(await h.pttl(key)).toBe(-2);
      await consume(b);
      let ttl = await h.pttl(key);
      expect(ttl).toBeGreaterThan(6_000 - SLACK_MS);
      expect(ttl).toBeLessThanOrEqual(6_000);
      for (let i = 0; i < 10; i++) await consume(b);
      ttl = await h.pttl(key);
      expect(ttl).toBeGreaterThan(60_000 - SLACK_MS);
      expect(ttl).toBeLessThanOrEqual(60_000);
    });
  });
}
