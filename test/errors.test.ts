import { readdir, readFile } from 'node:fs/promises';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, errorResponse, GatewayError, rawErrorResponse, writeError, type ErrorCode } from '../src/errors.ts';

const CODES = Object.keys(ERRORS) as ErrorCode[];

describe('the edge error catalogue', () => {
  it.each(CODES)('%s has an error status and a default detail, and renders {detail, code} only', (code) => {
    const { status, detail } = ERRORS[code];
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(600);
    expect(STATUS_CODES[status]).toBeDefined();
    expect(detail).not.toBe('');
    const error = new GatewayError(code);
    expect(error.status).toBe(status);
    expect(JSON.stringify(error)).toBe(JSON.stringify({ detail, code }));
    expect(JSON.stringify(new GatewayError(code, 'other'))).toBe(`{"detail":"other","code":"${code}"}`);
  });

  // A code spelt outside the catalogue could drift from it: anywhere else, a code literal must be checked against it.
  it('no module but src/errors.ts spells a code unchecked', async () => {
    const unchecked: string[] = [];
    const src = join(import.meta.dirname, '..', 'src');
    for (const file of await readdir(src, { recursive: true })) {
      if (!file.endsWith('.ts') || file === 'errors.ts') continue;
      const lines = (await readFile(join(src, file), 'utf8')).split('\n');
      lines.forEach((line, i) => {
        const spelt = CODES.some((code) => line.includes(`'${code}'`) || line.includes(`"${code}"`));
        if (spelt && !line.includes('satisfies ErrorCode')) unchecked.push(`src/${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(unchecked).toEqual([]);
  });
});

describe('the edge error renderers', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) =>
      writeError(res, new GatewayError(req.url!.slice(1) as ErrorCode), { 'x-request-id': 'r1' }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each(CODES)('%s: on a Node response, as a Web Response and as raw HTTP/1.1, with its status', async (code) => {
    const { status, detail } = ERRORS[code];
    const body = JSON.stringify({ detail, code });

    const res = await fetch(`${base}/${code}`);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    expect(res.headers.get('x-request-id')).toBe('r1');
    expect(await res.text()).toBe(body);

    const web = errorResponse(new GatewayError(code));
    expect(web.status).toBe(status);
    expect(web.headers.get('content-type')).toBe('application/json');
    expect(await web.text()).toBe(body);

    expect(rawErrorResponse(new GatewayError(code))).toBe(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
});
