import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';
import pino from 'pino';
import {
  createAgentServer,
  type AgentServer,
  type AgentServerOptions,
} from '../../../src/services/agent-server/app.ts';
import type { ApiKeyVerifier } from '../../../src/services/agent-server/auth/authenticate.ts';
import { listen, type Listening } from '../../../src/listen/listen.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

/** App configs the tests serve. */
export const FIXTURE_APP = fileURLToPath(new URL('./fixtures/app/langgraph.json', import.meta.url));
export const FIXTURE_AUTH_APP = fileURLToPath(new URL('./fixtures/auth-app/langgraph.json', import.meta.url));
export const EXAMPLE_APP = fileURLToPath(new URL('../../../examples/app/langgraph.json', import.meta.url));
export const EXAMPLE_API_KEY_APP = fileURLToPath(
  new URL('../../../examples/app/langgraph.api-key.json', import.meta.url),
);

/** Keys of organisation `acme` start with `ak-acme-`; of `other`, with `ak-other-`. Anything else is unknown. */
export const testVerifier: ApiKeyVerifier = async (key) => {
  const m = /^ak-(acme|other)-/.exec(key);
  return m ? { org: m[1]!, workspace: `${m[1]}-ws` } : null;
};

/** A fresh key of `org` (each test its own, so the edge's per-key rate limits never meet). */
export const newKey = (org: 'acme' | 'other' = 'acme') => `ak-${org}-${randomUUID()}`;

export interface RunningAgentServer {
  readonly server: AgentServer;
  readonly listening: Listening;
  readonly url: string;
  close(): Promise<void>;
}

export async function startAgentServer(options: Partial<AgentServerOptions> = {}): Promise<RunningAgentServer> {
  const server = await createAgentServer({
    configPath: FIXTURE_APP,
    verifyApiKey: testVerifier,
    org: 'acme',
    log: pino({ level: 'silent' }),
    ...options,
  });
  const listening = await listen(server.app, 0, '127.0.0.1');
  server.sockets.attach(listening.server);
  return {
    server,
    listening,
    url: listening.url,
    async close() {
      await server.close();
      const cut = setTimeout(() => listening.server.closeAllConnections(), 500);
      await listening.close(0);
      clearTimeout(cut);
    },
  };
}

/** The Agent Server behind the edge (in-process gateway, US rules, AGENT_SERVER_URL pointing at it). */
export interface Stack {
  readonly agent: RunningAgentServer;
  readonly edge: TestGateway;
  /** `{base_url}` for clients: the edge. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startStack(options: Partial<AgentServerOptions> = {}): Promise<Stack> {
  const agent = await startAgentServer(options);
  const edge = await startTestGateway({ AGENT_SERVER_URL: agent.url, LOG_LEVEL: 'silent' });
  return {
    agent,
    edge,
    url: edge.url,
    async close() {
      await edge.close();
      await agent.close();
    },
  };
}

/**
 * Responses the client saw (status and headers), recorded by a fetch passed as the client's public
 * `callerOptions.fetch`.
 */
export interface Seen {
  readonly url: string;
  readonly status: number;
  readonly headers: Headers;
}

/** The public JS client, unmodified, against `url`. */
export function sdk(
  url: string,
  apiKey: string | null,
  headers: Record<string, string> = {},
): { client: Client; seen: Seen[] } {
  const seen: Seen[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    seen.push({ url: String(input), status: res.status, headers: res.headers });
    return res;
  };
  return {
    client: new Client({ apiUrl: url, apiKey, defaultHeaders: headers, callerOptions: { fetch: recording } }),
    seen,
  };
}

/** Every chunk of an SDK stream, collected. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

export interface RawFrame {
  readonly event: string | null;
  readonly data: string | null;
  /** A comment line (`: heartbeat`). */
  readonly comment: string | null;
}

/** Splits an SSE body into frames and comments exactly as written (blank line separated). */
export function parseSse(text: string): RawFrame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? null;
      const comment = lines.find((l) => l.startsWith(':'));
      return {
        event: field('event'),
        data: field('data'),
        comment: comment === undefined ? null : comment.slice(1).trim(),
      };
    });
}

/** Polls `check` until it returns a value (not undefined), up to `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 5000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const userInput = (content: string) => ({ messages: [{ role: 'user', content }] });

/** A logger writing JSON lines into memory, at every level. */
export function captureLog(): { log: pino.Logger; text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { log: pino({ level: 'trace' }, stream), text: () => text };
}

/**
 * A TCP relay in front of `target` that breaks the first connection whose stream has reached the frame with `id:
 * <cutAt>`.
 */
export async function cuttingRelay(target: string, cutAt = 5): Promise<{ url: string; cut(): boolean; close(): void }> {
  let cut = false;
  const relay = createServer((client: Socket) => {
    const upstream = connect(Number(new URL(target).port), '127.0.0.1');
    client.pipe(upstream);
    let relayed = '';
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      relayed += chunk.toString('latin1');
      if (!cut && relayed.includes(`\nid: ${cutAt}\n`)) {
        cut = true;
        client.destroy();
        upstream.destroy();
      }
    });
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}`,
    cut: () => cut,
    close: () => relay.close(),
  };
}
