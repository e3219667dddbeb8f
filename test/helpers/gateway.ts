import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { startGateway, type Gateway } from '../../src/gateway.ts';
import { createLogger } from '../../src/log.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { withRunPrefixes } from './run-prefixes.ts';

/**
 * The gateway started in-process for a test: settings from a plain env
 * object (PORT and ADMIN_PORT 0 unless given), the production logger
 * (`createLogger`, redaction included) writing into a buffer the test can
 * read and wait on.
 */
export interface TestGateway {
  readonly gateway: Gateway;
  /** `http://127.0.0.1:<port>` of the edge listener. */
  readonly url: string;
  readonly port: number;
  readonly logs: LogCapture;
  close(): Promise<void>;
}

export async function startTestGateway(given: Record<string, string> = {}): Promise<TestGateway> {
  const env = withRunPrefixes(given);
  const settings = loadSettings({ PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'info', ...env });
  const logs = new LogCapture();
  const gateway = await startGateway(settings, createLogger(settings.logLevel, logs.stream));
  const close = async () => {
    // A test that failed mid-stream can leave a connection open, and server.close() waits for it: cut it after a grace
    // period.
    const cut = setTimeout(() => [gateway.edge, gateway.admin].forEach((l) => l.server.closeAllConnections()), 1000);
    try {
      await gateway.close();
    } finally {
      clearTimeout(cut);
    }
  };
  return { gateway, url: `http://127.0.0.1:${gateway.edge.port}`, port: gateway.edge.port, logs, close };
}

/** JSON log lines written by pino into memory. */
export class LogCapture {
  private text = '';
  private waiters: (() => void)[] = [];
  readonly stream = new Writable({
    write: (chunk: Buffer | string, _enc, done) => {
      this.text += chunk.toString();
      for (const w of this.waiters.splice(0)) w();
      done();
    },
  });

  /** Everything written so far, raw. */
  raw(): string {
    return this.text;
  }

  lines(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /**
   * The first line matching `pred`, waiting up to `timeoutMs` for it (a request's line is written after its response).
   */
  async waitFor(pred: (line: Record<string, unknown>) => boolean, timeoutMs = 2000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines().find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no log line matched within ${timeoutMs} ms; log:\n${this.text}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  /** The `request` line of the request with this id. */
  requestLine(requestId: string, timeoutMs?: number): Promise<Record<string, unknown>> {
    return this.waitFor((l) => l.msg === 'request' && l.requestId === requestId, timeoutMs);
  }
}

/** A temporary RULES_DIR holding `us.yaml` with the given rules. */
export function rulesDir(yaml: string): { readonly dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'edge-rules-'));
  writeFileSync(join(dir, 'us.yaml'), yaml);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * One rule that lets everything through (per client IP, a million a second): for tests about forwarding, not limits.
 */
export const OPEN_RULES = `
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;
