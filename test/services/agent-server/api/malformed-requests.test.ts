import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, startAgentServer, type RunningAgentServer } from '../helpers.ts';

/**
 * Every operation the Agent Server documents, sent bad input: unknown ids,
 * odd path values, bodies that are not JSON or of the wrong shape, garbage
 * queries. Each answer must be a 4xx with a JSON `detail`, never a 5xx.
 */
describe('malformed requests to every documented operation', () => {
  let agent: RunningAgentServer;
  beforeAll(async () => {
    agent = await startAgentServer();
  });
  afterAll(() => agent?.close());

  const BODIES: (string | undefined)[] = [
    undefined,
    '',
    '{',
    '[]',
    '"text"',
    '{"assistant_id": 5, "namespace": "x", "limit": -1, "schedule": 7, "values": 3}',
    '{"metadata": [], "stream_mode": ["nope"], "checkpoint": "x"}',
  ];
  const PATH_VALUES = ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '%E2%80%AE%00', 'x'.repeat(300)];
  const QUERIES = [
    '',
    '?limit=abc&offset=-1&xray=maybe&stream_mode=[&namespace=&key=&before=&cancel_on_disconnect=perhaps',
  ];

  it('answers 4xx JSON, never 5xx', async () => {
    const doc = (await (await fetch(`${agent.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const failures: string[] = [];
    let sent = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods)) {
        const values = path.includes('{') ? PATH_VALUES : [''];
        for (const value of values) {
          const url = path.replace(/\{[^}]+\}/g, value);
          for (const query of QUERIES) {
            for (const body of method === 'get' ? [undefined] : BODIES) {
              const res = await fetch(`${agent.url}${url}${query}`, {
                method: method.toUpperCase(),
                headers: {
                  'x-api-key': newKey(),
                  ...(body === undefined ? {} : { 'content-type': 'application/json' }),
                },
                body,
              });
              sent++;
              const type = res.headers.get('content-type') ?? '';
              if (type.startsWith('text/event-stream')) {
                await res.body?.cancel();
                continue;
              }
              const text = await res.text();
              if (res.status >= 500)
                failures.push(
                  `${method.toUpperCase()} ${url}${query} ${body ?? '(no body)'} → ${res.status} ${text.slice(0, 200)}`,
                );
              else if (res.status >= 400 && !/"detail"/.test(text))
                failures.push(
                  `${method.toUpperCase()} ${url}${query} → ${res.status} without detail: ${text.slice(0, 200)}`,
                );
            }
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(500);
    expect(failures).toEqual([]);
  }, 60_000);
});
