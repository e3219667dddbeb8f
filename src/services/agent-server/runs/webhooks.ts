import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { WebhookTargets, webhookOrigin, type WebhookTarget } from './webhook-target.ts';

export interface WebhookOptions {
  /** WEBHOOK_HOSTS_ALLOWED: hosts (`host`, `host:port`) and addresses (IP, CIDR) a webhook may reach all the same. */
  readonly allowed?: readonly string[];
  /** How long one attempt may take, connecting to the end of the answer; default 10 s. */
  readonly timeoutMs?: number;
  /** The waits before each retry (their count is the number of retries); default 1 s, 4 s, 16 s. */
  readonly retryDelaysMs?: readonly number[];
}

/** What is read of a webhook's answer at most: it is dropped, not kept. */
const ANSWER_BYTES = 4096;

/**
 * Calls runs' webhooks when they end, as the official server does: `POST <webhook>` with the run as JSON (its final
 * `status`, `values`, `error`, `run_started_at`, `run_ended_at`, `webhook_sent_at`). Fire and forget: `send` returns at
 * once, the run's end is recorded before, nothing waits for the call. Each call resolves the host once and connects to
 * the addresses it checked (webhook-target.ts), follows no redirect, gives up an attempt after `timeoutMs`, reads no
 * more than a few KiB of the answer, and retries a network failure, a timeout, 408, 429 or 5xx after the next delay.
 * Failures are logged with the webhook's origin only (its path or query may hold a token).
 */
export class Webhooks {
  readonly targets: WebhookTargets;
  private readonly timeoutMs: number;
  private readonly delays: readonly number[];
  private readonly inFlight = new Set<AbortController>();

  constructor(
    private readonly log: Logger,
    options: WebhookOptions = {},
  ) {
    this.targets = new WebhookTargets(options.allowed ?? []);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.delays = options.retryDelaysMs ?? [1_000, 4_000, 16_000];
  }

  /** Why `url` may not be a webhook (naming `webhook`), or null: what a run's creation checks (422). */
  async check(url: string): Promise<string | null> {
    return (await this.targets.admit(url)).refused;
  }

  /** Calls `url` with `payload` in the background; never throws, never blocks. */
  send(url: string, payload: unknown, runId: string): void {
    const stop = new AbortController();
    this.inFlight.add(stop);
    void this.deliver(url, JSON.stringify(payload), runId, stop.signal)
      .catch((err: unknown) =>
        this.log.warn({ run_id: runId, webhook: webhookOrigin(url), err: (err as Error)?.message }, 'webhook failed'),
      )
      .finally(() => this.inFlight.delete(stop));
  }

  /** Stops every call in flight (the server is stopping). */
  close(): void {
    for (const stop of this.inFlight) stop.abort(new Error('the server is stopping'));
    this.inFlight.clear();
  }

  private async deliver(url: string, body: string, runId: string, stop: AbortSignal): Promise<void> {
    const log = this.log.child({ run_id: runId, webhook: webhookOrigin(url) });
    // Checked again at the call (its DNS may answer otherwise than when the run was created), then pinned.
    const verdict = await this.targets.admit(url);
    if (verdict.refused !== null) {
      log.warn({ reason: verdict.refused }, 'webhook not called');
      return;
    }
    const dispatcher = pinnedAgent(verdict.target, this.timeoutMs);
    try {
      for (let attempt = 0; ; attempt++) {
        const outcome = await this.attempt(verdict.target.url, body, dispatcher, stop);
        if (outcome === 'ok') {
          log.debug({ attempt: attempt + 1 }, 'webhook called');
          return;
        }
        const retry = outcome.retry && attempt < this.delays.length && !stop.aborted;
        log.warn({ attempt: attempt + 1, failure: outcome.failure, retrying: retry }, 'webhook call failed');
        if (!retry) return;
        await sleep(this.delays[attempt]!, stop);
      }
    } finally {
      await dispatcher.close().catch(() => undefined);
    }
  }

  private async attempt(
    url: URL,
    body: string,
    dispatcher: Agent,
    stop: AbortSignal,
  ): Promise<'ok' | { retry: boolean; failure: string }> {
    try {
      const answer = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'langgraph-agent-server-webhook' },
        body,
        dispatcher,
        signal: AbortSignal.any([stop, AbortSignal.timeout(this.timeoutMs)]),
      });
      // Not kept: read up to a small bound (so the connection ends cleanly), then dropped.
      await answer.body.dump({ limit: ANSWER_BYTES }).catch(() => undefined);
      const status = answer.statusCode;
      if (status >= 200 && status < 300) return 'ok';
      return { retry: status >= 500 || status === 408 || status === 429, failure: `answered ${status}` };
    } catch (err) {
      const e = err as Error & { code?: string };
      return { retry: true, failure: e.code ?? e.name ?? 'error' };
    }
  }
}

/**
 * An undici agent whose connections go to the checked addresses whatever DNS answers now (the TLS name stays the
 * host's, so its certificate is checked as usual). Without addresses (a host WEBHOOK_HOSTS_ALLOWED names) it resolves
 * as usual.
 */
export function pinnedAgent(target: WebhookTarget, timeoutMs: number): Agent {
  const addresses = target.addresses;
  const timeouts = { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs };
  if (addresses === null || addresses.length === 0) return new Agent(timeouts);
  const all: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  const lookup = (
    _host: string,
    options: { all?: boolean } | number | undefined,
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    if (typeof options === 'object' && options?.all) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  };
  return new Agent({ ...timeouts, connect: { lookup } as never });
}

function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stop.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
