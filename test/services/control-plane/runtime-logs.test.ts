import { describe, expect, it } from 'vitest';
import { RuntimeLogs } from '../../../src/services/control-plane/serving/runtime-logs.ts';

/** The per-deployment ring behind `GET /v2/deployments/{id}/logs`: bounded in lines and bytes, cursors, cleaning. */
describe('runtime logs', () => {
  it('keeps at most maxLines lines per deployment, newest last, each deployment its own', () => {
    const logs = new RuntimeLogs({ maxLines: 3 });
    for (let i = 1; i <= 5; i++) logs.add('a', 'r1', 'stdout', `a${i}`);
    logs.add('b', 'r2', 'stderr', 'b1');
    expect(logs.read('a', { limit: 10 }).map((e) => e.text)).toEqual(['a3', 'a4', 'a5']);
    expect(logs.read('b', { limit: 10 })).toMatchObject([{ text: 'b1', revision_id: 'r2', stream: 'stderr' }]);
    expect(logs.read('a', { limit: 2 }).map((e) => e.text)).toEqual(['a4', 'a5']);
  });

  it('keeps at most maxBytes per deployment', () => {
    const logs = new RuntimeLogs({ maxBytes: 1000 });
    for (let i = 0; i < 50; i++) logs.add('a', 'r', 'stdout', `${i} ${'x'.repeat(200)}`);
    const kept = logs.read('a', { limit: 2000 });
    expect(kept.length).toBeLessThan(5);
    expect(kept.at(-1)!.text.startsWith('49 ')).toBe(true);
  });

  it('since a cursor: the first `limit` lines after it; since a time: the lines after it', () => {
    let now = Date.parse('2026-11-27T12:00:00Z');
    const logs = new RuntimeLogs({ now: () => new Date(now) });
    for (let i = 1; i <= 5; i++) {
      logs.add('a', 'r', 'stdout', `l${i}`);
      now += 1000;
    }
    const [first, second] = logs.read('a', { limit: 2, since: { cursor: 0 } });
    expect([first!.text, second!.text]).toEqual(['l1', 'l2']);
    expect(logs.read('a', { limit: 10, since: { cursor: Number(second!.id) } }).map((e) => e.text)).toEqual([
      'l3',
      'l4',
      'l5',
    ]);
    expect(
      logs.read('a', { limit: 10, since: { time: Date.parse('2026-11-27T12:00:02.5Z') } }).map((e) => e.text),
    ).toEqual(['l4', 'l5']);
  });

  it('terminal escapes and control characters are removed; a forged JSON line stays text', () => {
    const logs = new RuntimeLogs();
    logs.add('a', 'r', 'stdout', '\u001b[31mred\u001b[0m\r\u001b]0;title\u0007 done\u0000');
    logs.add('a', 'r', 'stdout', '{"deployment":"b","msg":"forged"}');
    logs.add('a', 'r', 'stdout', '\u001b[2K');
    logs.add('a', 'r', 'stdout', 'safe \u202eexe.txt\u2028next');
    expect(logs.read('a', { limit: 10 }).map((e) => e.text)).toEqual([
      'red done',
      '{"deployment":"b","msg":"forged"}',
      'safe exe.txtnext',
    ]);
  });

  it('followers get each new line, then null when the deployment is forgotten', () => {
    const logs = new RuntimeLogs();
    const got: (string | null)[] = [];
    const stop = logs.subscribe('a', (e) => got.push(e?.text ?? null));
    logs.add('a', 'r', 'stdout', 'one');
    logs.add('b', 'r', 'stdout', 'other');
    logs.forget('a');
    stop();
    expect(got).toEqual(['one', null]);
    expect(logs.read('a', { limit: 10 })).toEqual([]);
  });
});
