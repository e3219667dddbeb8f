import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryAgentStore } from '../../src/services/agent-server/store/memory-agent-store.ts';
import type { Run } from '../../src/services/agent-server/store/records.ts';
import { newKey, startAgentServer, type RunningAgentServer } from '../services/agent-server/helpers.ts';
import { startControlPlane, type TestControlPlane } from '../services/control-plane/helpers.ts';

/**
 * Finding: a run whose `input` nested JSON ~4,250 levels deep overflowed the stack while the run was saved, in a
 * background promise nothing handled: Node exited, with the edge, the control plane and the Agent Server. Deep
 * thread, assistant and cron bodies answered 500. Now every JSON body of both services is refused past
 * MAX_JSON_DEPTH (422 `json_too_deep`) before any work, and no failure inside a run ends the process: the run ends
 * as `error`.
 */
const nested = (depth: number, leaf = '1') => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
const deepList = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const TOO_DEEP = {
  detail: [
    {
      loc: ['body'],
      msg: 'Request body is nested deeper than 64 levels (MAX_JSON_DEPTH)',
      type: 'json_too_deep',
    },
  ],
};

/** Unhandled rejections seen while a test ran (each one would have ended a process without vitest's listener). */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

describe('the Agent Server', () => {
  let agent: RunningAgentServer;
  beforeAll(async () => {
    agent = await startAgentServer();
  });
  afterAll(() => agent?.close());

  const post = (path: string, body: string) =>
    fetch(`${agent.url}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
      body,
    });

  it.each([
    ['/runs/wait', `{"assistant_id":"agent","input":${nested(4300)}}`],
    ['/runs', `{"assistant_id":"agent","input":${nested(4300)}}`],
    ['/threads', `{"metadata":${nested(4300)}}`],
    ['/assistants', `{"graph_id":"agent","config":${deepList(5000)}}`],
    ['/runs/crons', `{"assistant_id":"agent","schedule":"* * * * *","input":${nested(65)}}`],
    ['/store/items/search', deepList(65)],
  ])('refuses a body nested too deep: POST %s → 422 json_too_deep', async (path, body) => {
    const res = await post(path, body);
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual(TOO_DEEP);
  });

  it('still takes a body 64 levels deep, and brackets inside strings do not count', async () => {
    const res = await post('/threads', `{"metadata":${nested(63, '"[[[[{{{{"')}}`);
    expect(res.status).toBe(200);
    expect((await post('/threads', `{"metadata":{"x":"${'['.repeat(200)}"}}`)).status).toBe(200);
  });

  it('is still serving after all that, with no unhandled rejection', async () => {
    await post('/runs/wait', `{"assistant_id":"agent","input":${nested(4300)}}`);
    const res = await post('/runs/wait', '{"assistant_id":"agent","input":{"messages":[]}}');
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 50));
    expect(unhandled).toEqual([]);
  });
});

/** A store whose saving of a marked run fails the way a too-deep value does. */
class OverflowingStore extends MemoryAgentStore {
  override async putRun(run: Run): Promise<void> {
    if (JSON.stringify(run.kwargs).includes('overflow-on-save'))
      throw new RangeError('Maximum call stack size exceeded');
    return super.putRun(run);
  }
}

describe('a run that cannot be saved', () => {
  let agent: RunningAgentServer;
  beforeAll(async () => {
    agent = await startAgentServer({ store: new OverflowingStore() });
  });
  afterAll(() => agent?.close());

  it('fails its request, raises no unhandled rejection, and the server goes on', async () => {
    const send = (input: unknown) =>
      fetch(`${agent.url}/runs/wait`, {
        method: 'POST',
        headers: { 'x-api-key': newKey(), 'content-type': 'application/json' },
        body: JSON.stringify({ assistant_id: 'agent', input }),
      });
    const failed = await send({ messages: [], note: 'overflow-on-save' });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ detail: 'Internal server error.' });
    await new Promise((r) => setTimeout(r, 100));
    expect(unhandled).toEqual([]);
    expect((await send({ messages: [] })).status).toBe(200);
  });
});

describe('the control plane', () => {
  let svc: TestControlPlane;
  beforeAll(async () => {
    svc = await startControlPlane();
  });
  afterAll(() => svc?.close());

  it.each([
    ['POST', '/v2/deployments'],
    ['PATCH', '/v2/deployments/00000000-0000-4000-8000-000000000000'],
    ['POST', '/api-host/v2/deployments'],
  ])('refuses a body nested too deep: %s %s → 422 json_too_deep', async (method, path) => {
    const tenant = await svc.tenant();
    for (const body of [`{"name":"x","secrets":${nested(4300)}}`, deepList(65)]) {
      const res = await fetch(`${svc.url}${path}`, {
        method,
        headers: { 'x-api-key': tenant.key, 'x-tenant-id': tenant.workspace, 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(422);
      expect(await res.json()).toEqual(TOO_DEEP);
    }
  });
});
