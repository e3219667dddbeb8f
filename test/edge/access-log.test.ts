import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLog, type AccessEntry } from '../../src/edge/access-log.ts';
import { createLogger } from '../../src/log.ts';

/** Every write the destination receives, and the lines in them. */
function capture(level = 'info') {
  const writes: string[] = [];
  const root = createLogger(level, { write: (s: string) => void writes.push(s) });
  return { root, writes, lines: () => writes.join('').split('\n').filter(Boolean) };
}

/** Longer than the log holds its lines (50 ms). */
const held = () => new Promise((resolve) => setTimeout(resolve, 80));
const turn = () => new Promise((resolve) => setImmediate(resolve));

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
  it('writes one JSON line in the format pino writes, with the logger bindings, whatever the path holds', async () => {
    const { root, lines } = capture();
    accessLog(root.child({ component: 'edge' }))(ENTRY);
    await held();
    root.child({ component: 'edge' }).info({ requestId: 'req-1' }, 'request');
    expect(lines()).toHaveLength(2);
    const ours = JSON.parse(lines()[0]!) as Record<string, unknown>;
    const pinos = JSON.parse(lines()[1]!) as Record<string, unknown>;
    expect(Object.keys(ours).slice(0, 3)).toEqual(Object.keys(pinos).slice(0, 3)); // level, time, bindings first
    const { fellBack: _, ...logged } = ENTRY;
    expect(ours).toMatchObject({ level: pinos.level, component: 'edge', msg: 'request', ...logged });
    expect(ours).not.toHaveProperty('fellBack');
    expect(typeof ours.time).toBe('number');
  });

  it('leaves out what a request did not have, and says when fallback buckets decided', async () => {
    const { root, lines } = capture();
    accessLog(root)({
      ...ENTRY,
      rule: undefined,
      upstream: undefined,
      fellBack: true,
      decision: 'unlimited',
      status: 400,
    });
    await held();
    const line = JSON.parse(lines()[0]!) as Record<string, unknown>;
    expect(line).not.toHaveProperty('rule');
    expect(line).not.toHaveProperty('upstream');
    expect(line).toMatchObject({ fellBack: true, decision: 'unlimited', status: 400 });
  });

  it('writes through pino itself for a logger createLogger did not make', () => {
    const writes: string[] = [];
    const root = pino({ base: undefined }, { write: (s: string) => void writes.push(s) });
    accessLog(root)({ ...ENTRY, fellBack: true });
    expect(JSON.parse(writes[0]!)).toMatchObject({ requestId: 'req-1', fellBack: true, msg: 'request', level: 30 });
  });

  it('writes nothing when the level is above info', async () => {
    const { root, writes } = capture('warn');
    accessLog(root)(ENTRY);
    await held();
    expect(writes).toEqual([]);
  });

  it('hands the lines of 50 ms over in one write, and a full batch at once', async () => {
    const { root, writes, lines } = capture();
    const log = accessLog(root);
    log({ ...ENTRY, requestId: 'turn-0' });
    await turn();
    for (let i = 1; i < 3; i++) log({ ...ENTRY, requestId: `turn-${i}` });
    await turn();
    expect(writes).toEqual([]);
    await held();
    expect(writes).toHaveLength(1);
    expect(lines().map((l) => (JSON.parse(l) as { requestId: string }).requestId)).toEqual([
      'turn-0',
      'turn-1',
      'turn-2',
    ]);
    for (let i = 0; i < 500; i++) log({ ...ENTRY, requestId: `big-${i}` }); // past 64 KiB at once
    expect(writes.length).toBeGreaterThan(1);
    await held();
    expect(lines()).toHaveLength(503);
  });

  it('loses no line when the process exits before the turn ends (destination on a file descriptor, as stdout is)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'access-log-'));
    const file = join(dir, 'out.log');
    const script = [
      `import { openSync } from 'node:fs';`,
      `import pino from 'pino';`,
      `import { accessLog } from ${JSON.stringify(join(import.meta.dirname, '../../src/edge/access-log.ts'))};`,
      `import { createLogger } from ${JSON.stringify(join(import.meta.dirname, '../../src/log.ts'))};`,
      `const log = accessLog(createLogger('info', pino.destination({ fd: openSync(${JSON.stringify(file)}, 'a'), sync: false })));`,
      `log(${JSON.stringify({ ...ENTRY, requestId: 'at-exit' })});`,
      `process.exit(0);`,
    ].join('\n');
    try {
      await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: join(import.meta.dirname, '../..'),
      });
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ requestId: 'at-exit', msg: 'request' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
