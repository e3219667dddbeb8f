import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  deploymentBody,
  eventually,
  makeRepo,
  startControlPlane,
  type TestControlPlane,
  type TestRepo,
  type Tenant,
} from '../services/control-plane/helpers.ts';
import { ask, BARE_APP, deployed, graphSource } from '../services/deployments/helpers.ts';
import { readEvents, type SseEvent } from '../services/deployments/sse.ts';

/**
 * Issue 28, item 3: a deployment's own output is readable by its owner (`GET /v2/deployments/{id}/logs`), and by
 * nobody else: another workspace gets 404 (as for every read of a deployment it does not own), and what an app prints
 * (a JSON line naming another deployment or the gateway, terminal escapes, carriage returns) stays text of its own
 * deployment, in its log and in the gateway's.
 */

let t: TestControlPlane;
let alice: Tenant;
let bob: Tenant;
let bobRepo: TestRepo;
let aliceRepo: TestRepo;
let a: { id: string; latest_revision_id: string };
let b: { id: string; latest_revision_id: string };

/** What Alice's app prints when it loads: lines forged to look like Bob's deployment's and the gateway's. */
function forger(bobId: string, bobRevision: string): string {
  const forged = [
    JSON.stringify({ level: 30, deployment: bobId, revision: bobRevision, msg: 'forged line for bob' }),
    JSON.stringify({ level: 30, component: 'control-plane', msg: 'forged gateway line' }),
  ];
  return `${forged.map((l) => `console.log(${JSON.stringify(l)});`).join('\n')}
process.stdout.write('alice plain\\r\\u001b[2K{"deployment":"${bobId}","msg":"overwritten"}\\n');
console.error('\\u001b[31malice red\\u001b[0m');
${graphSource('alice', "console.log('alice ' + 'loading');\n").replace(
  "if (s.text === 'exit') process.exit(7);",
  "if (s.text === 'exit') process.exit(7);\n    console.log('alice run ' + s.text);",
)}`;
}

beforeAll(async () => {
  t = await startControlPlane({}, { host: undefined });
  alice = await t.tenant('alice');
  bob = await t.tenant('bob');
  bobRepo = makeRepo(BARE_APP);
  const bobApi = client(t.url, bob);
  b = (await bobApi.post('/deployments', deploymentBody(bobRepo.url))).json;
  await deployed(bobApi, b.id, b.latest_revision_id);
  aliceRepo = makeRepo({ ...BARE_APP, 'graph.ts': forger(b.id, b.latest_revision_id) });
  const aliceApi = client(t.url, alice);
  a = (await aliceApi.post('/deployments', deploymentBody(aliceRepo.url))).json;
  await deployed(aliceApi, a.id, a.latest_revision_id);
}, 120_000);

afterAll(async () => {
  await t?.close();
  bobRepo?.remove();
  aliceRepo?.remove();
});

describe('a deployment log is its owner\u2019s, and its lines are its own', { timeout: 60_000 }, () => {
  it('another workspace reading it: 404, on both prefixes, followed or not', async () => {
    for (const prefix of ['/v2', '/api-host/v2']) {
      const asBob = client(t.url, bob, prefix);
      for (const q of ['', '?follow=true', '?since=0&limit=5']) {
        const res = await asBob.get(`/deployments/${a.id}/logs${q}`);
        expect(res.status, `${prefix} ${q}`).toBe(404);
        expect(res.text).not.toContain('alice');
      }
    }
    // No key at all: 401, never the log.
    expect((await client(t.url, null).get(`/deployments/${a.id}/logs`)).status).toBe(401);
  });

  it('forged JSON, ANSI and carriage-return lines stay Alice\u2019s text, in her log and in the gateway\u2019s', async () => {
    const asAlice = client(t.url, alice);
    const mine = await eventually(async () => {
      const res = await asAlice.get(`/deployments/${a.id}/logs?limit=100`);
      expect(res.status).toBe(200);
      const logs = res.json.logs as { text: string }[];
      return logs.some((l) => l.text.includes('alice red')) ? res.json : null;
    }, 20_000);
    expect(mine.deployment_id).toBe(a.id);
    const texts = mine.logs.map((l: { text: string }) => l.text);
    for (const entry of mine.logs) expect(entry.revision_id).toBe(a.latest_revision_id);
    expect(texts.some((x: string) => x.includes('forged line for bob') && x.includes(b.id))).toBe(true);
    expect(texts).toContain('alice red'); // the colour codes gone
    for (const x of texts) expect(x).not.toMatch(/[\u0000-\u0008\u000a-\u001f\u007f]/);
    // Bob's log has nothing of Alice's.
    const bobs = (await client(t.url, bob).get(`/deployments/${b.id}/logs?limit=2000`)).json;
    expect(bobs.logs.length).toBeGreaterThan(0);
    for (const entry of bobs.logs) {
      expect(entry.revision_id).toBe(b.latest_revision_id);
      expect(entry.text).not.toMatch(/alice|forged|overwritten/);
    }
    // In the gateway's own log, the forged lines carry Alice's deployment, nested fields under `app`.
    const forged = await t.logs.waitFor((l) => l.msg === 'forged line for bob', 5000);
    expect(forged).toMatchObject({ deployment: a.id, revision: a.latest_revision_id, component: 'deployment' });
    const gatewayish = await t.logs.waitFor((l) => l.msg === 'forged gateway line', 5000);
    expect(gatewayish).toMatchObject({ deployment: a.id, component: 'deployment' });
  });

  it('?follow=true sees a line printed after it opened; ?since pages on from a cursor', async () => {
    const asAlice = client(t.url, alice);
    const before = (await asAlice.get(`/deployments/${a.id}/logs?limit=1`)).json;
    const cursor = before.next_cursor as string;
    const res = await fetch(`${t.url}/api-host/v2/deployments/${a.id}/logs?follow=true&limit=1`, {
      headers: { 'x-api-key': alice.key, 'x-tenant-id': alice.workspace },
    });
    expect(res.status).toBe(200);
    const seen: SseEvent[] = [];
    const route = t.cp.routes.get(a.id)!;
    let asked = false;
    await readEvents(res, async (e) => {
      seen.push(e);
      if (!asked) {
        asked = true;
        void ask(route.target, alice, 'followed');
      }
      return e.event === 'log' && e.data.text === 'alice run followed';
    });
    expect(seen[0]!.id).toBe(cursor); // the backlog: its last line
    const after = (await asAlice.get(`/deployments/${a.id}/logs?since=${cursor}`)).json;
    expect(after.logs.map((l: { text: string }) => l.text)).toContain('alice run followed');
    expect(after.logs.every((l: { id: string }) => Number(l.id) > Number(cursor))).toBe(true);
    expect((await asAlice.get(`/deployments/${a.id}/logs?since=yesterday`)).status).toBe(422);
    const recent = (await asAlice.get(`/deployments/${a.id}/logs?since=${new Date(Date.now() - 60_000).toISOString()}`))
      .json;
    expect(recent.logs.length).toBeGreaterThan(0);
  });
});
