import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonErrorPosition } from '../../src/services/shared/json-error-position.ts';
import {
  client,
  deploymentBody,
  makeRepo,
  startControlPlane,
  waitForRevision,
  type TestControlPlane,
  type TestRepo,
} from '../services/control-plane/helpers.ts';

/**
 * Finding "parse error echoes file content": a build whose langgraph_config_path names a file that is not JSON failed
 * with JSON.parse's message, which quotes the file (`secrets.env: not valid JSON (Unexpected token 'D',
 * "DATABASE_P"...`): any file of the repository could be read back through a revision's status. Only the position
 * may show, in the status and in the log.
 */
const SECRET = 'DATABASE_PASSWORD=hunter2-very-secret\nAPI_TOKEN=tok_live_123\n';
let cp: TestControlPlane;
let repo: TestRepo;

beforeAll(async () => {
  repo = makeRepo({ 'secrets.env': SECRET, 'broken.json': '{\n  "graphs": {\n    "a": DATABASE_PASSWORD\n' });
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.close();
  repo?.remove();
});

describe('a config that is not JSON fails with its position only', () => {
  it.each([
    ['secrets.env', 'line 1, column 1'],
    ['broken.json', 'line 3, column 10'],
  ])('%s', async (configPath, position) => {
    const api = client(cp.url, await cp.tenant());
    const body = deploymentBody(repo.url, {
      source_revision_config: { repo_ref: 'main', langgraph_config_path: configPath, image_uri: null },
    });
    const created = await api.post('/deployments', body);
    expect(created.status).toBe(201);
    const rev = await waitForRevision(api, created.json.id, created.json.latest_revision_id);
    expect(rev.status).toBe('BUILD_FAILED');
    expect(rev.status_message).toBe(`BUILD_FAILED: ${configPath}: not valid JSON (${position})`);
    const everything = JSON.stringify(rev) + cp.logs.raw();
    for (const leak of ['DATABASE_P', 'hunter2', 'tok_live', 'Unexpected token'])
      expect(everything).not.toContain(leak);
  });

  it('positions: stated by the parser, found by prefix, or the end', () => {
    expect(jsonErrorPosition('{"a":1,}')).toBe('line 1, column 8');
    expect(jsonErrorPosition('DATABASE_PASSWORD=x')).toBe('line 1, column 1');
    expect(jsonErrorPosition('{\n"a":\n DATA}')).toBe('line 3, column 2');
    expect(jsonErrorPosition('{"graphs": ')).toBe('line 1, column 12: ends too soon');
  });
});
