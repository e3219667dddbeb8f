import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FIXTURE_AUTH_APP, startAgentServer, userInput, type RunningAgentServer } from '../helpers.ts';

/**
 * The protocol behind an app's own authentication and authorization handlers (fixtures/auth-app: `x-user` names the
 * user, `x-team` their team, threads are visible to their team only): commands, event streams and WebSocket
 * handshakes see the same users and filters as the REST API.
 */
let server: RunningAgentServer;
beforeAll(async () => {
  server = await startAgentServer({ configPath: FIXTURE_AUTH_APP });
});
afterAll(() => server.close());

const as = (user: string, team: string) => ({ 'x-user': user, 'x-team': team, 'content-type': 'application/json' });

async function command(headers: Record<string, string>, threadId: string, body: unknown): Promise<any> {
  const res = await fetch(`${server.url}/threads/${threadId}/commands`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function closeCode(threadId: string, headers: Record<string, string>): Promise<number> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/threads/${threadId}/stream/events`, { headers });
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

describe('custom auth', () => {
  it("keeps a team's thread from another team: 404 for its events, an error for its commands, 4404 for its socket", async () => {
    const threadId = crypto.randomUUID();
    const alice = as('alice', 'red');
    const bob = as('bob', 'blue');
    const started = await command(alice, threadId, {
      id: 1,
      method: 'run.start',
      params: { assistant_id: 'whoami', input: userInput('me') },
    });
    expect(started.body).toMatchObject({ type: 'success' });

    const events = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: bob,
      body: JSON.stringify({ channels: ['values'] }),
    });
    expect(events.status).toBe(404);
    for (const method of ['run.start', 'state.get', 'agent.getTree'])
      expect(
        (
          await command(bob, threadId, {
            id: 2,
            method,
            params: { assistant_id: 'whoami', input: null, namespace: [] },
          })
        ).body,
      ).toMatchObject({ type: 'error', id: 2, error: 'invalid_argument', message: `Thread ${threadId} not found` });
    expect(await closeCode(threadId, bob)).toBe(4404);

    // the owner's team reads it
    expect(
      (await command(as('carol', 'red'), threadId, { id: 3, method: 'agent.getTree', params: {} })).body,
    ).toMatchObject({ type: 'success' });
  });

  it('refuses a socket the handler refuses with 4401, and a handler failure with 1011', async () => {
    expect(await closeCode(crypto.randomUUID(), { 'x-user': 'nobody' })).toBe(4401);
    expect(await closeCode(crypto.randomUUID(), { 'x-user': 'crash' })).toBe(1011);
  });
});
