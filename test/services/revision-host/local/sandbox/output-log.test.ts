import { PassThrough } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { pipeOutput } from '../../../../../src/services/revision-host/local/output-log.ts';
import { parseFromChild } from '../../../../../src/services/revision-host/local/messages.ts';

/** A revision's output as log lines: fields it cannot forge, a flood cut with a counter; its messages checked. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const dest = new PassThrough();
  dest.on('data', (b: Buffer) => {
    for (const l of b.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  const log = pino({ level: 'trace', base: undefined }, dest).child({ deployment: 'victim-d', revision: 'victim-r' });
  return { lines, log };
}
const tick = () => new Promise((r) => setTimeout(r, 20));

describe('revision output', () => {
  it('cannot forge deployment, revision or a fatal level: those fields are nested under app', async () => {
    const { lines, log } = capture();
    const stdout = new PassThrough();
    pipeOutput({ stdout, stderr: new PassThrough() }, { log, remember: () => {} });
    stdout.write(
      JSON.stringify({ level: 60, msg: 'forged', deployment: 'other', revision: 'x', component: 'edge' }) + '\n',
    );
    await tick();
    const line = lines.find((l) => l.msg === 'forged')!;
    expect(line).toMatchObject({ deployment: 'victim-d', revision: 'victim-r', level: 50 });
    expect(line.app).toEqual({ deployment: 'other', revision: 'x', component: 'edge' });
    expect(JSON.stringify(line).match(/"deployment"/g)).toHaveLength(2);
  });

  it('drops a flood past the budget, counts it, and cuts lines that never end', async () => {
    const { lines, log } = capture();
    const stdout = new PassThrough();
    let t = 0;
    pipeOutput(
      { stdout, stderr: new PassThrough() },
      { log, remember: () => {}, burst: 10, linesPerSecond: 10, now: () => t },
    );
    stdout.write('x\n'.repeat(50));
    await tick();
    expect(lines.filter((l) => l.msg === 'x')).toHaveLength(10);
    t = 1000;
    stdout.write('y'.repeat(100_000) + '\nlater\n');
    await new Promise((r) => setTimeout(r, 300));
    const dropped = lines.find((l) => typeof l.dropped === 'number');
    expect(dropped?.dropped).toBe(40);
    expect(lines.some((l) => l.msg === 'later')).toBe(true);
    expect(lines.find((l) => String(l.msg).startsWith('yyy'))?.msg).toHaveLength(8192);
  });
});

describe('messages from a revision', () => {
  it('are null unless of a known shape and size', () => {
    for (const m of [null, 'x', 1, [], {}, { type: 'ready' }, { type: 'verify', id: 'x', key: 'k' }, { type: 'stop' }])
      expect(parseFromChild(m), JSON.stringify(m)).toBeNull();
    expect(parseFromChild({ type: 'verify', id: 1, key: 'k'.repeat(5000) })).toBeNull();
    expect(parseFromChild({ type: 'ready', url: 'http://evil', graphs: ['a'] })).toEqual({
      type: 'ready',
      graphs: ['a'],
    });
  });
});
