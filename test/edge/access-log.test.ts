import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLog, type AccessEntry } from '../../src/edge/access-log.ts';

function capture(level = 'info') {
  const lines: string[] = [];
  const root = pino({ level, base: undefined }, { write: (s: string) => void lines.push(s) });
  return { root, lines };
}

const ENTRY: AccessEntry = {
  requestId: 'req-1',
  method: 'POST',
  path: '/threads/"quoted"\\back/\u00e9/\u2028',
  rule: 'runs-query',
  decision: 'allowed',
  fellBack: false,
  status: 200,
  upstream: 'agent-server',
  ms: 1.5,
};

describe('accessLog', () => {
  it('writes one JSON line in the format pino writes, with the logger bindings, whatever the path holds', () => {
    const { root, lines } = capture();
    accessLog(root.child({ component: 'edge' }))(ENTRY);
    root.child({ component: 'edge' }).info({ requestId: 'req-1' }, 'request');
    expect(lines).toHaveLength(2);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    const ours = JSON.parse(lines[0]!) as Record<string, unknown>;
    const pinos = JSON.parse(lines[1]!) as Record<string, unknown>;
    expect(Object.keys(ours).slice(0, 3)).toEqual(Object.keys(pinos).slice(0, 3)); // level, time, bindings first
    const { fellBack: _, ...logged } = ENTRY;
    expect(ours).toMatchObject({ level: pinos.level, component: 'edge', msg: 'request', ...logged });
    expect(ours).not.toHaveProperty('fellBack');
    expect(typeof ours.time).toBe('number');
  });

  it('leaves out what a request did not have, and says when fallback buckets decided', () => {
    const { root, lines } = capture();
    accessLog(root)({ ...ENTRY, rule: undefined, upstream: undefined, fellBack: true, decision: 'unlimited', status: 400 });
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).not.toHaveProperty('rule');
    expect(line).not.toHaveProperty('upstream');
    expect(line).toMatchObject({ fellBack: true, decision: 'unlimited', status: 400 });
  });

  it('writes nothing when the level is above info', () => {
    const { root, lines } = capture('warn');
    accessLog(root)(ENTRY);
    expect(lines).toEqual([]);
  });
});
