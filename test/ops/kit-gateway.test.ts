import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { SHARED_REDIS_URL } from '../helpers/shared-redis.ts';
import { ownDatabase, SHARED_POSTGRES_URL } from '../helpers/shared-postgres.ts';
import {
  composeEnv,
  declaredMetrics,
  deploymentEnv,
  family,
  manifest,
  metricNames,
  probes,
  promqlExpressions,
} from './kit.ts';

/**
 * The kit against a running gateway started with its own settings (compose.yaml's environment, the Deployment's env
 * and the rule files of its ConfigMap): every probe path answers on the admin listener, and every metric the
 * dashboard and the alerts read is on /metrics. Only what cannot run here is replaced: Redis (the shared test Redis),
 * the secrets, the builds folder and the ports.
 */
const secrets = () => ({
  IDENTITY_SECRET: randomBytes(24).toString('hex'),
  SECRETS_KEY: randomBytes(32).toString('base64'),
});

/** PostgreSQL: the bundled Agent Server's in a database of this test's own, the deployments' on the shared server. */
async function databases(): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  const own = await ownDatabase();
  return { env: { DATABASE_URI: own.uri, DEPLOYMENTS_DATABASE_URI: SHARED_POSTGRES_URL }, drop: () => own.drop() };
}

type Setup = { env: Record<string, string>; token: string | null; cleanup: () => Promise<void> };

const setups: [string, () => Promise<Setup>][] = [
  [
    'compose.yaml',
    async () => {
      const builds = mkdtempSync(join(tmpdir(), 'kit-builds-'));
      const db = await databases();
      const env = { ...composeEnv(), ...secrets(), REDIS_URL: SHARED_REDIS_URL, ...db.env, BUILD_WORK_DIR: builds };
      const cleanup = async () => {
        rmSync(builds, { recursive: true, force: true });
        await db.drop();
      };
      return { env, token: null, cleanup };
    },
  ],
  [
    'deploy/kubernetes/overlays/local-host',
    async () => {
      const builds = mkdtempSync(join(tmpdir(), 'kit-builds-'));
      // RULES_DIR as the pod sees it: the ConfigMap's files.
      const rules = mkdtempSync(join(tmpdir(), 'kit-rules-'));
      for (const [name, text] of Object.entries(manifest('base/rules-configmap.yaml').data as Record<string, string>))
        writeFileSync(join(rules, name), text);
      const token = randomBytes(12).toString('hex');
      const { values, fromSecret } = deploymentEnv();
      const db = await databases();
      const fromTheSecret: Record<string, string> = {
        ...secrets(),
        REDIS_URL: SHARED_REDIS_URL,
        ...db.env,
        ADMIN_TOKEN: token,
      };
      expect(Object.keys(fromTheSecret).sort()).toEqual([...fromSecret].sort());
      const env = { ...values, ...fromTheSecret, RULES_DIR: rules, BUILD_WORK_DIR: builds };
      const cleanup = async () => {
        [builds, rules].forEach((d) => rmSync(d, { recursive: true, force: true }));
        await db.drop();
      };
      return { env, token, cleanup };
    },
  ],
];

describe.each(setups)('operations kit on a gateway started with the settings of %s', (_name, setup) => {
  let gateway: TestGateway;
  let admin: string;
  let token: string | null;
  let cleanup: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const s = await setup();
    ({ token, cleanup } = s);
    gateway = await startTestGateway({
      ...s.env,
      KEY_PREFIX: `kit-${randomBytes(6).toString('hex')}`,
      PORT: '0',
      ADMIN_PORT: '0',
    });
    admin = `http://127.0.0.1:${gateway.gateway.admin.port}`;
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await cleanup?.();
  });

  it.each(probes())('$where: $path answers 200 on the admin listener', async ({ port, path }) => {
    // Named ports are the Deployment's `admin` (9090 in the container), numbered ones the image's ADMIN_PORT.
    expect([9090, 'admin']).toContain(port);
    const res = await fetch(admin + path);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  });

  it('every metric the dashboard and the alert rules read is on /metrics', async () => {
    const res = await fetch(`${admin}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    expect(res.status).toBe(200);
    const types = declaredMetrics(await res.text());
    const expressions = promqlExpressions();
    expect(expressions.length).toBeGreaterThan(20);
    const missing = expressions.flatMap(({ where, expr }) => {
      const names = metricNames(expr);
      if (names.length === 0) return [`${where}: reads no gateway metric`];
      return names.filter((n) => !types.has(family(n, types))).map((n) => `${where}: ${n}`);
    });
    expect(missing).toEqual([]);
  });
});

describe('metric names in PromQL', () => {
  const types = new Map([
    ['gateway_store_duration_seconds', 'histogram'],
    ['gateway_requests_total', 'counter'],
  ]);
  it('are read from expressions, a histogram suffix mapping to its family and nothing else', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (le, store) (rate(gateway_store_duration_seconds_bucket{instance=~"x"}[5m])))',
      ),
    ).toEqual(['gateway_store_duration_seconds_bucket']);
    expect(family('gateway_store_duration_seconds_bucket', types)).toBe('gateway_store_duration_seconds');
    expect(family('gateway_store_duration_seconds_count', types)).toBe('gateway_store_duration_seconds');
    // A counter's name ending in _count would be its own: only histograms have suffixes.
    expect(family('gateway_requests_count', types)).toBe('gateway_requests_count');
  });
});
