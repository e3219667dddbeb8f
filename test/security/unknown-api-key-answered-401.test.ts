import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { startUpstream, type TestUpstream } from '../helpers/upstream.ts';
import { EXAMPLE_APP, startAgentServer, type RunningAgentServer } from '../services/agent-server/helpers.ts';
import { SHARED_REDIS_URL } from '../helpers/shared-redis.ts';

/**
 * Finding: with KEY_CHECK on, an `x-api-key` the registry does not hold was answered 401 `unknown_api_key` at the
 * edge. That broke every client carrying an unrelated key to a deployment with custom authentication (the public JS
 * client sends LANGSMITH_API_KEY / LANGGRAPH_API_KEY as x-api-key by default). An unknown key is never a bucket of
 * its own: the request is limited as if it carried no key, and forwarded; the upstream authenticates.
 */
describe('KEY_CHECK=on, a deployment with custom auth, an unrelated x-api-key', () => {
  const keysPrefix = `sec-keys-${randomUUID()}`;
  const keyPrefix = `sec-kc-${randomUUID().slice(0, 8)}`;
  let agent: RunningAgentServer;
  let controlPlane: TestUpstream;
  let gw: TestGateway;

  beforeAll(async () => {
    agent = await startAgentServer({ configPath: EXAMPLE_APP }); // bearer-token custom auth
    controlPlane = await startUpstream();
    gw = await startTestGateway({
      KEY_CHECK: 'on',
      REDIS_URL: SHARED_REDIS_URL,
      KEY_PREFIX: keyPrefix,
      API_KEYS_PREFIX: keysPrefix, // an empty registry: every key is unknown to it
      AGENT_SERVER_URL: agent.url,
      CONTROL_PLANE_URL: controlPlane.url,
    });
  });

  afterAll(async () => {
    await gw?.close();
    await agent?.close();
    await controlPlane?.close();
    const redis = new Redis(SHARED_REDIS_URL);
    await deleteByPrefix(redis, `${keyPrefix}:`);
    await redis.quit();
  });

  const get = async (headers: Record<string, string>) => {
    const res = await request(`${gw.url}/threads/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ limit: 10 }),
    });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };

  it('gets the upstream’s answer (custom auth lets the bearer in), counted under the no-key rule', async () => {
    const unrelated = `lsv2_pt_${randomUUID().replaceAll('-', '')}`;
    const res = await get({ 'x-api-key': unrelated, authorization: 'Bearer alice-token' });
    expect(res.status).toBe(200);
    expect(Array.isArray(JSON.parse(res.body))).toBe(true);
    // No x-user-id: the catch-all `public` rule (per IP), never a bucket of the unknown key.
    expect(res.headers['ratelimit-policy']).toMatch(/^"public\.ip";q=100;w=60(, "guard\.[a-z-]+";q=\d+;w=\d+)*$/);
    expect(gw.logs.raw()).not.toContain(unrelated);
  });

  it('with x-user-id too, is counted by user and IP; the upstream’s own 401 comes through unchanged', async () => {
    const res = await get({ 'x-api-key': `lsv2_pt_${randomUUID()}`, 'x-user-id': `u-${randomUUID()}` });
    expect(res.status).toBe(401); // no bearer token: the deployment's custom auth says no, not the edge
    expect(res.body).not.toContain('unknown_api_key');
    expect(String(res.headers['ratelimit-policy'])).toMatch(/^"default\.user-ip";q=1000;w=10/);
  });
});
