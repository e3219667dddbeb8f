import { randomBytes, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rulesDir, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { deleteByPrefix } from '../helpers/redis-keys.ts';
import { SHARED_REDIS_URL, sharedRedis } from '../helpers/shared-redis.ts';
import { startHeldStreams, type TestUpstream } from '../helpers/upstream.ts';

/**
 * An operator reads and resets one identity's buckets and slots on the admin listener (issue 29, item 5), with the
 * operator token, audited in the log; on the memory store and on Redis.
 */

const TOKEN = `op-${randomBytes(12).toString('hex')}`;
const PREFIX = `t-bucket-admin-${randomBytes(6).toString('hex')}`;
const RULES = `
- id: scarce
  match: { path: /scarce }
  limits:
    - { by: api-key, count: 3, per: 1h, category: Scarce }
- id: streams
  match: { path: /stream }
  limits:
    - { by: api-key, concurrent: 1, category: Streams }
- id: open
  limits:
    - { by: ip, count: 1000000, per: 1s, category: Test }
`;

let upstream: TestUpstream;
let rules: ReturnType<typeof rulesDir>;
let redis: Redis;
let ends: (() => void)[] = [];

beforeAll(async () => {
  rules = rulesDir(RULES);
  ({ upstream, ends } = await startHeldStreams());
  redis = sharedRedis();
});

afterAll(async () => {
  for (const e of ends) e();
  await upstream?.close();
  rules?.remove();
  await deleteByPrefix(redis, PREFIX);
  await redis.quit();
});

function scenario(name: string, env: () => Record<string, string>) {
  describe(`bucket reads and resets, ${name}`, () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startTestGateway({
        ...env(),
        ADMIN_TOKEN: TOKEN,
        RULES_DIR: rules.dir,
        AGENT_SERVER_URL: upstream.url,
        CONTROL_PLANE_URL: upstream.url,
      });
    });
    afterAll(() => gw?.close());

    const admin = async (method: 'GET' | 'DELETE', query: string, token: string | null = TOKEN) => {
      const res = await request(`http://127.0.0.1:${gw.gateway.admin.port}/limits/buckets?${query}`, {
        method,
        headers: token === null ? {} : { authorization: `Bearer ${token}` },
      });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    const send = async (path: string, key: string) => {
      const res = await request(`${gw.url}${path}`, { headers: { 'x-api-key': key } });
      await res.body.dump();
      return res.statusCode;
    };

    it('answers 401 without the operator token, and 400 naming what to fix', async () => {
      expect(await admin('GET', 'policy=scarce.api-key&api_key=k', null)).toMatchObject({
        status: 401,
        body: { code: 'admin_token_required' },
      });
      expect((await admin('DELETE', 'policy=scarce.api-key&api_key=k', 'wrong')).status).toBe(401);
      expect(await admin('GET', 'policy=nope.api-key&api_key=k')).toMatchObject({
        status: 400,
        body: { detail: 'No limit of the rules in force is named "nope.api-key"' },
      });
      expect((await admin('GET', 'policy=scarce.api-key')).body.detail).toMatch(/api_key=/);
    });

    it('reads a key’s bucket (in clear or by digest) and resets it: the key is admitted again', async () => {
      const key = `lsv2_${randomUUID()}`;
      for (let i = 0; i < 3; i++) expect(await send('/scarce', key)).toBe(200);
      expect(await send('/scarce', key)).toBe(429);
      const read = await admin('GET', `policy=scarce.api-key&api_key=${key}`);
      expect(read).toMatchObject({
        status: 200,
        body: { policy: 'scarce.api-key', by: 'api-key', count: 3, per_seconds: 3600, remaining: 0 },
      });
      const digest = String(read.body.key).split(':').at(-1)!;
      expect(read.body.key).toMatch(/:scarce:api-key:[A-Za-z0-9_-]{22}$/);
      expect(JSON.stringify(read.body)).not.toContain(key);
      expect((await admin('GET', `policy=scarce.api-key&digest=${digest}`)).body.remaining).toBe(0);

      expect((await admin('DELETE', `policy=scarce.api-key&digest=${digest}`)).body).toMatchObject({ reset: true });
      expect((await admin('GET', `policy=scarce.api-key&api_key=${key}`)).body.remaining).toBe(3);
      expect(await send('/scarce', key)).toBe(200);

      // Audited, with the store key and never the key in clear.
      const audit = await gw.logs.waitFor((l) => l.audit === 'bucket-reset' && l.key === read.body.key);
      expect(audit).toMatchObject({ policy: 'scarce.api-key' });
      expect(gw.logs.lines().some((l) => l.audit === 'bucket-read' && l.key === read.body.key)).toBe(true);
      expect(gw.logs.raw()).not.toContain(key);
    });

    it('reads the slots an identity holds, and a reset frees them', async () => {
      const key = `lsv2_${randomUUID()}`;
      const held = await request(`${gw.url}/stream`, { headers: { 'x-api-key': key } });
      expect(held.statusCode).toBe(200);
      expect(await send('/stream', key)).toBe(429);
      expect((await admin('GET', `policy=streams.api-key&api_key=${key}`)).body).toMatchObject({
        concurrent: 1,
        until: 'response',
        held: 1,
        remaining: 0,
      });
      await admin('DELETE', `policy=streams.api-key&api_key=${key}`);
      expect((await admin('GET', `policy=streams.api-key&api_key=${key}`)).body).toMatchObject({ held: 0 });
      const again = await request(`${gw.url}/stream`, { headers: { 'x-api-key': key } });
      expect(again.statusCode).toBe(200);
      // The stream from before the reset ends: its release must not free the slot the new stream holds.
      ends.shift()!();
      await held.body.dump();
      await new Promise((r) => setTimeout(r, 200));
      expect((await admin('GET', `policy=streams.api-key&api_key=${key}`)).body).toMatchObject({ held: 1 });
      expect(await send('/stream', key)).toBe(429);
      for (const e of ends.splice(0)) e();
      await again.body.dump();
    });
  });
}

scenario('memory store', () => ({}));
scenario('Redis', () => ({
  REDIS_URL: SHARED_REDIS_URL,
  KEY_PREFIX: PREFIX,
  IDENTITY_SECRET: 'bucket-admin-test-secret',
  STORE_TIMEOUT_MS: '2000',
}));
