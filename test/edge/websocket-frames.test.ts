import { describe, expect, it } from 'vitest';
import { FrameCursor, FrameError } from '../../src/proxy/ws-frames.ts';
import { ClientInspector, type HeldCommand } from '../../src/proxy/ws-inspect.ts';
import { frame } from '../helpers/raw-websocket.ts';
import { prng } from '../helpers/prng.ts';

/**
 * The edge's frame reading on any split of the byte stream (TCP may cut anywhere, a byte at a time): the bytes it
 * forwards are exactly the client's, in order; each work command stops the stream once, before any of its bytes
 * leave; the upstream's frame boundaries are found wherever the reads fall.
 */

const WORK = new Set(['run.start', 'input.respond']);
const inspectorOptions = { workMethods: WORK, inspectBytes: 256, maxMessageBytes: 1 << 20 };

/** Feeds `bytes` in pieces of the given sizes, allowing every command; returns what was forwarded and the commands. */
function feed(bytes: Buffer, sizes: () => number): { out: Buffer; commands: HeldCommand[]; forwardedBefore: number[] } {
  const inspector = new ClientInspector(inspectorOptions);
  const out: Buffer[] = [];
  const commands: HeldCommand[] = [];
  const forwardedBefore: number[] = [];
  let length = 0;
  const push = (chunk: Buffer) => {
    let next: Buffer | null = chunk;
    while (next !== null) {
      const r = inspector.push(next);
      for (const b of r.forward) (out.push(b), (length += b.length));
      next = null;
      if (r.command !== null) {
        commands.push(r.command);
        forwardedBefore.push(length);
        for (const b of inspector.allow()) (out.push(b), (length += b.length));
        next = r.rest;
      }
    }
  };
  for (let at = 0; at < bytes.length;) {
    const n = Math.max(1, Math.min(sizes(), bytes.length - at));
    push(bytes.subarray(at, at + n));
    at += n;
  }
  return { out: Buffer.concat(out), commands, forwardedBefore };
}

const cmd = (id: number, method: string) => JSON.stringify({ id, method, params: { input: 'x'.repeat(id * 7) } });

describe('ClientInspector', () => {
  const stream = Buffer.concat([
    frame(0x1, cmd(1, 'subscription.subscribe')),
    frame(0x1, cmd(2, 'run.start')),
    frame(0x9, 'ping'),
    frame(0x1, cmd(3, 'run.start').slice(0, 10), { fin: false }),
    frame(0xa, 'pong'),
    frame(0x0, cmd(3, 'run.start').slice(10)),
    frame(0x2, cmd(4, 'input.respond')),
    frame(0x1, 'not json'),
    frame(0x1, `{"id":5,"params":"${'y'.repeat(400)}","method":"state.get"}`), // longer than inspectBytes
    frame(0x1, cmd(6, 'state.get')),
  ]);

  it.each([
    ['whole', () => 1 << 20],
    ['a byte at a time', () => 1],
    ['in 3-byte reads', () => 3],
  ])('forwards every byte unchanged and stops at each work command (%s)', (_what, sizes) => {
    const { out, commands } = feed(stream, sizes);
    expect(out.equals(stream)).toBe(true);
    expect(commands.map((c) => c.id)).toEqual([2, 3, 4, null]);
  });

  it('on random splits too', () => {
    const random = prng(7);
    for (let i = 0; i < 200; i++) {
      const { out, commands } = feed(stream, () => 1 + Math.floor(random() * 40));
      expect(out.equals(stream)).toBe(true);
      expect(commands.map((c) => c.id)).toEqual([2, 3, 4, null]);
    }
  });

  it('nothing of a command leaves before its decision', () => {
    const first = frame(0x1, cmd(1, 'state.get'));
    const { forwardedBefore } = feed(Buffer.concat([first, frame(0x1, cmd(2, 'run.start'))]), () => 1);
    expect(forwardedBefore).toEqual([first.length]);
  });

  it('refuses what it will not pass', () => {
    const bad = (bytes: Buffer) => {
      try {
        new ClientInspector(inspectorOptions).push(bytes);
        return null;
      } catch (err) {
        return (err as FrameError).code;
      }
    };
    expect(bad(frame(0x1, 'a', { mask: false }))).toBe(1002);
    expect(bad(frame(0x1, '', { length: 2 ** 21 }))).toBe(1009);
    expect(bad(Buffer.concat([frame(0x1, 'a', { fin: false }), frame(0x1, 'b')]))).toBe(1002);
  });
});

describe('FrameCursor (the upstream side)', () => {
  it('finds the first frame boundary wherever a read falls', () => {
    const a = frame(0x1, 'x'.repeat(300), { mask: false });
    const b = frame(0x1, 'y', { mask: false });
    const bytes = Buffer.concat([a, b]);
    for (let cut = 1; cut < a.length; cut++) {
      const cursor = new FrameCursor();
      // At a boundary already: a close frame could go first.
      expect(cursor.skip(bytes, 0, 'boundary')).toBe(0);
      expect(cursor.skip(bytes.subarray(0, cut), 0, 'end')).toBe(cut);
      expect(cursor.atBoundary).toBe(false);
      expect(cursor.skip(bytes.subarray(cut), 0, 'boundary')).toBe(a.length - cut);
      expect(cursor.atBoundary).toBe(true);
    }
  });

  it('a length beyond 2^53 is an error, not a number', () => {
    expect(() => new FrameCursor().skip(frame(0x2, '', { mask: false, length: 2 ** 62 }), 0, 'end')).toThrow(
      FrameError,
    );
  });
});
