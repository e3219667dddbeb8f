import { describe, expect, it } from 'vitest';
import { ReplyCounter, RequestFrames } from '../../../../src/services/revision-host/local/resp-frames.ts';
import { prng } from '../../../helpers/prng.ts';

/** The forwarder's RESP readers (resp-frames.ts), fed the same stream cut at random places. */
const encode = (args: string[]) =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

function cuts(text: string, random: () => number): Buffer[] {
  const all = Buffer.from(text);
  const out: Buffer[] = [];
  for (let at = 0; at < all.length;) {
    const n = 1 + Math.floor(random() * (random() < 0.5 ? 4 : 64));
    out.push(all.subarray(at, at + n));
    at += n;
  }
  return out;
}

describe('RequestFrames', () => {
  it('streams every command forwarded, drops the others, wherever the stream is cut', () => {
    const random = prng(34);
    for (let round = 0; round < 200; round++) {
      const commands = Array.from({ length: 1 + Math.floor(random() * 6) }, () => [
        ['SET', 'hset', 'FCALL', 'get'][Math.floor(random() * 4)]!,
        `fn-${Math.floor(random() * 9)}`,
        'v\r\n'.repeat(Math.floor(random() * 40)),
      ]);
      const text = commands.map(encode).join('');
      const frames = new RequestFrames(1 << 20);
      const seen: string[][] = [];
      const bytes: Buffer[] = [];
      // Every other SET is dropped: its bytes must not reach `data`.
      let sets = 0;
      const sink = {
        head: (command: string, arg1: string) => (seen.push([command, arg1]), command !== 'set' || sets++ % 2 === 0),
        data: (b: Buffer) => void bytes.push(Buffer.from(b)),
      };
      for (const chunk of cuts(text, random)) expect(frames.feed(chunk, sink)).toBeNull();
      expect(seen).toEqual(commands.map(([c, a]) => [c!.toLowerCase(), a]));
      let kept = 0;
      const forwarded = commands.filter(([c]) => c !== 'SET' || kept++ % 2 === 0);
      expect(Buffer.concat(bytes).toString()).toBe(forwarded.map(encode).join(''));
    }
  });

  it('refuses inline commands, bad headers and frames over the bound', () => {
    const feed = (text: string, max = 1024) =>
      new RequestFrames(max).feed(Buffer.from(text), { head: () => true, data: () => {} });
    expect(feed('PING\r\n')).toMatch(/arrays of bulk strings/);
    expect(feed('*1\r\n:5\r\n')).toMatch(/bulk string/);
    expect(feed('*0\r\n')).toMatch(/multibulk length/);
    expect(feed(`*1\r\n$${'9'.repeat(40)}\r\n`)).toMatch(/too long/);
    expect(feed(encode(['SET', 'k', 'x'.repeat(2000)]))).toMatch(/over 1 KiB/);
    // Its size counts as it arrives: a huge announced length is refused once the bound is passed, not buffered.
    expect(feed(`*2\r\n$3\r\nSET\r\n$100000000\r\n${'x'.repeat(1100)}`)).toMatch(/over 1 KiB/);
  });

  it('decides as soon as the command and its first argument are known, holding no more than them', () => {
    const frames = new RequestFrames(1 << 20);
    const got: Buffer[] = [];
    let heads = 0;
    const sink = { head: () => (heads++, true), data: (b: Buffer) => void got.push(b) };
    frames.feed(Buffer.from(`*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n`), sink);
    expect(heads).toBe(1);
    frames.feed(Buffer.alloc(50_000, 120), sink);
    expect(Buffer.concat(got).length).toBe(50_000 + 29); // streamed, not held until the frame ends
    // A long first argument is not waited for either.
    const long = new RequestFrames(1 << 20);
    let head: string[] = [];
    long.feed(Buffer.from(`*2\r\n$5\r\nFCALL\r\n$100000\r\nabc`), {
      head: (c, a) => ((head = [c, a]), true),
      data: () => {},
    });
    expect(head).toEqual(['fcall', '']);
  });
});

describe('ReplyCounter', () => {
  it('finds where each reply ends, nested arrays and bulk strings with CRLF in them included', () => {
    const replies = [
      '+OK\r\n',
      '-ERR no\r\n',
      ':42\r\n',
      '$-1\r\n',
      '$5\r\na\r\nbc\r\n',
      '*0\r\n',
      '*-1\r\n',
      '*3\r\n$1\r\nx\r\n*2\r\n:1\r\n*1\r\n+in\r\n-ERR last\r\n',
      '*2\r\n$0\r\n\r\n$3\r\n\r\nx\r\n',
    ];
    const random = prng(7);
    for (let round = 0; round < 200; round++) {
      const picked = Array.from({ length: 1 + Math.floor(random() * 8) }, () => replies[Math.floor(random() * 9)]!);
      const text = picked.join('');
      const counter = new ReplyCounter();
      const ends: [number, string][] = [];
      let offset = 0;
      for (const chunk of cuts(text, random)) {
        expect(counter.feed(chunk, (end, type) => ends.push([offset + end, type]))).toBeNull();
        offset += chunk.length;
      }
      let at = 0;
      expect(ends).toEqual(picked.map((r) => [(at += r.length), r[0]]));
    }
  });
});
