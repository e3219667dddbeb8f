import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, prettyDestination } from '../../src/log.ts';
import { loadEdgeSettings } from '../../src/settings/edge.ts';
import { LogCapture } from '../helpers/gateway.ts';
import { withRunPrefixes } from '../helpers/run-prefixes.ts';

/** Text written into memory. */
function sink(): { stream: Writable; text(): string } {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => ((text += chunk.toString()), done()) });
  return { stream, text: () => text };
}

const isJson = (line: string) => {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
};

describe('LOG_FORMAT', () => {
  it('is json unless set, pretty when asked, and anything else fails naming the variable', () => {
    expect(loadEdgeSettings({}).logFormat).toBe('json');
    expect(loadEdgeSettings({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadEdgeSettings({ LOG_FORMAT: 'JSON' }).logFormat).toBe('json');
    expect(() => loadEdgeSettings({ LOG_FORMAT: 'text' })).toThrow(/^LOG_FORMAT: must be one of json, pretty/);
  });

  it('pretty: a line a person reads (level, message, fields), not JSON, no colour codes off a terminal', () => {
    const out = sink();
    const log = createLogger('info', prettyDestination(out.stream));
    log.child({ component: 'control-plane' }).warn({ deploymentId: 'd-1', apiKey: 'k' }, 'revision process stopped');
    const [first, ...rest] = out.text().trimEnd().split('\n');
    expect(first).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: revision process stopped$/);
    expect(isJson(first!)).toBe(false);
    expect(out.text()).not.toContain('\u001b[');
    expect(rest.join('\n')).toContain('deploymentId: "d-1"');
    // Redaction holds in either format.
    expect(rest.join('\n')).toContain('apiKey: "[redacted]"');
  });

  it('json: every line stays one JSON object', () => {
    const capture = new LogCapture();
    createLogger('info', capture.stream).info({ deploymentId: 'd-1' }, 'revision serving');
    expect(capture.lines()).toEqual([
      expect.objectContaining({ level: 30, msg: 'revision serving', deploymentId: 'd-1' }),
    ]);
  });

  it('gateway start with LOG_FORMAT=pretty writes its lines, request lines included, readable', async () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const child = spawn(process.execPath, ['bin/gateway.js', 'start'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...withRunPrefixes({ PORT: '0', ADMIN_PORT: '0', LOG_FORMAT: 'pretty' }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    const exited = new Promise((resolve) => child.once('close', resolve));
    try {
      const deadline = Date.now() + 30_000;
      while (!/INFO: gateway listening/.test(text) && Date.now() < deadline && child.exitCode === null)
        await new Promise((r) => setTimeout(r, 100));
      expect(text).toMatch(/\] INFO: gateway listening\n/);
      const port = /\n\s+port: (\d+)\n/.exec(text.slice(text.indexOf('gateway listening')))?.[1];
      expect(port).toBeDefined();
      await fetch(`http://127.0.0.1:${port}/ok`).then((r) => r.arrayBuffer());
      const deadline2 = Date.now() + 5000;
      while (!/INFO: request\n/.test(text) && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 100));
      expect(text).toMatch(/INFO: request\n/);
      expect(text.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});
