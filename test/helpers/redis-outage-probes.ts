import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import type { TestGateway } from './gateway.ts';
import { sleep } from './load.ts';
import { metrics } from './redis-outage-measure.ts';
import { metricValue } from './scrape-metrics.ts';

/**
 * Sequential requests for the store-fault tests: one request at a time, and the questions they answer (does Redis
 * decide again? does a bucket hold across edges?).
 */

export async function send(
  gw: TestGateway,
  path: string,
  key: string,
  id: string,
): Promise<{ status: number; ratelimit: string | undefined; body: string }> {
  const res = await request(`${gw.url}${path}`, {
    headers: { 'x-api-key': key, 'x-request-id': id },
    headersTimeout: 5000,
    bodyTimeout: 5000,
  });
  const body = await res.body.text();
  return { status: res.statusCode, ratelimit: res.headers['ratelimit'] as string | undefined, body };
}

/**
 * Sends one request per entry of `plan` (to that gateway), in order, all with one fresh api key, to the `small` rule
 * (4 per hour). Repeated with a fresh key, at most 3 times, while any of them was decided by a fallback bucket (see the
 * note in redis-outage.ts): the result is Redis's decision.
 */
export async function smallBucketThrough(
  plan: readonly TestGateway[],
): Promise<{ statuses: number[]; fellBack: boolean }> {
  let last = { statuses: [] as number[], fellBack: true };
  for (let attempt = 0; attempt < 3 && last.fellBack; attempt++) {
    const key = `small-${randomBytes(6).toString('hex')}`;
    const statuses: number[] = [];
    let fellBack = false;
    for (const [i, gw] of plan.entries()) {
      const id = `${key}-${i}`;
      statuses.push((await send(gw, '/small', key, id)).status);
      if ((await gw.logs.requestLine(id)).fellBack === true) fellBack = true;
    }
    last = { statuses, fellBack };
  }
  return last;
}

/**
 * Requests to /wide, one every 50 ms, until the breaker gauge reads 0 (closed) and a request was decided by Redis again
 * (200, not by a fallback).
 */
export async function untilRedisDecides(gw: TestGateway, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let n = 0; ; n++) {
    const id = `recover-${randomBytes(4).toString('hex')}-${n}`;
    const { status } = await send(gw, '/wide', id, id);
    const decidedByRedis = status === 200 && (await gw.logs.requestLine(id)).fellBack === undefined;
    if (decidedByRedis && metricValue(await metrics(gw), 'gateway_store_breaker_state') === 0) return;
    if (Date.now() > deadline) throw new Error(`Redis did not decide a request again within ${timeoutMs} ms`);
    await sleep(50);
  }
}
