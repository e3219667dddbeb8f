import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, deploymentBody, makeRepo, startControlPlane, type TestRepo } from '../control-plane/helpers.ts';
import { BARE_APP, deployed, target } from './helpers.ts';
import { httpUrl } from '../../helpers/target-url.ts';
import { ownDatabase, type OwnDatabase } from '../../helpers/shared-postgres.ts';

/**
 * A deployment whose environment has DATABASE_URI (here a secret; the platform's own database per deployment is
 * another branch's work) keeps its Agent Server's data in that PostgreSQL: its process opens its storage from its
 * environment (agent-process.ts), as the server run alone and the gateway's bundled one do.
 */
let repo: TestRepo;
let workDir: string;
let db: OwnDatabase;

beforeAll(async () => {
  repo = makeRepo(BARE_APP);
  workDir = mkdtempSync(join(tmpdir(), 'deploy-database-'));
  db = await ownDatabase();
});
afterAll(async () => {
  repo?.remove();
  rmSync(workDir, { recursive: true, force: true });
  await db?.drop();
});

describe('a deployment with DATABASE_URI', () => {
  it('keeps its threads and runs in that database', async () => {
    const cp = await startControlPlane(
      // The revision shares the host's network, so it reaches the machine's PostgreSQL on loopback (in a network
      // namespace of its own it cannot: how a deployment reaches its database is the tenancy branch's).
      { BUILD_WORK_DIR: workDir, SANDBOX_NETWORK: 'host', TRUST_ALL_TENANTS: '1' },
      { host: undefined },
    );
    try {
      const tenant = await cp.tenant();
      const api = client(cp.url, tenant);
      const d = (
        await api.post('/deployments', deploymentBody(repo.url, { secrets: [{ name: 'DATABASE_URI', value: db.uri }] }))
      ).json;
      await deployed(api, d.id, d.latest_revision_id);
      const sdk = new Client({ apiUrl: await httpUrl(target(cp, d.id)), apiKey: tenant.key });
      const thread = await sdk.threads.create();
      await sdk.runs.wait(thread.thread_id, 'echo', { input: { text: 'in postgres' } });
      const raw = new pg.Client({ connectionString: db.uri });
      await raw.connect();
      try {
        const threads = await raw.query('SELECT thread_id FROM agent_threads');
        expect(threads.rows.map((r) => r.thread_id)).toEqual([thread.thread_id]);
        const runs = await raw.query('SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1', [
          thread.thread_id,
        ]);
        expect(runs.rows[0].n).toBe(1);
        const checkpoints = await raw.query('SELECT count(*)::int AS n FROM checkpoints WHERE thread_id = $1', [
          thread.thread_id,
        ]);
        expect(checkpoints.rows[0].n).toBeGreaterThan(0);
      } finally {
        await raw.end();
      }
    } finally {
      await cp.close();
    }
  }, 120_000);
});
