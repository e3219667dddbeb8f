import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';

/**
 * The benchmarks' canned upstream (bench/peers/upstream.ts) parses almost
 * nothing: these tests hold it to what it claims, so a benchmark never
 * measures a proxy against a server that answers the wrong number of times.
 */
let child: ChildProcess;
let port = 0;

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', 'bench/peers/upstream.ts'], {
    env: { ...process.env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  port = await new Promise<number>((resolve) =>
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port)),
  );
});

afterAll(() => {
  child.kill('SIGTERM');
});

/**
 * Writes `parts` on one connection, a few ms apart, and returns everything read until the server closes or `ms` pass.
 */
function exchange(parts: string[], ms = 300): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (s: string) => (got += s));
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    void (async () => {
      for (const part of parts) {
        socket.write(part);
        await new Promise((r) => setTimeout(r, 20));
      }
      setTimeout(() => socket.end(), ms);
    })();
  });
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

describe('bench upstream', () => {
  it('answers 200 with 100 bytes over a kept-alive connection', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await request(`http://127.0.0.1:${port}/any/path?q=${i}`, { headers: { 'x-api-key': 'k' } });
      expect(res.statusCode).toBe(200);
      expect((await res.body.text()).length).toBe(100);
    }
  });

  it('answers each pipelined request once, skipping Content-Length bodies even when split across reads', async () => {
    const got = await exchange([
      'GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc',
      'defghij',
      'GET /c HTTP/1.1\r\nHo',
      'st: x\r\n\r\n',
    ]);
    expect(count(got, 'HTTP/1.1 200 OK')).toBe(3);
  });

  it('closes after a request that asks to, and refuses a chunked body with 501', async () => {
    const closed = await exchange(['GET /a HTTP/1.1\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\n\r\n'], 2_000);
    expect(count(closed, 'HTTP/1.1 200 OK')).toBe(1);
    expect(closed).toContain('connection: close');
    const chunked = await exchange(
      ['POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'],
      2_000,
    );
    expect(chunked.startsWith('HTTP/1.1 501 ')).toBe(true);
  });
});
