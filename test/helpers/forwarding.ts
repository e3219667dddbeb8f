import { afterAll, beforeAll } from 'vitest';
import { OPEN_RULES, rulesDir, startTestGateway, type TestGateway } from './gateway.ts';
import { echoJson, startUpstream, type TestUpstream, type UpstreamHandler } from './upstream.ts';

/**
 * Two edges in front of two real upstreams, for the forwarding tests.
 * Limits are out of the way (one rule, a million per second); every request
 * of a test carries its own x-request-id, so it finds exactly its request at
 * the upstream (`seenById`). The agent-server upstream answers paths set in
 * `routes`, anything else with `echoJson`.
 */
export interface ForwardingSetup {
  readonly routes: Map<string, UpstreamHandler>;
  agent: TestUpstream;
  control: TestUpstream;
  /** Default settings. */
  main: TestGateway;
  /** MAX_BODY=1KiB, UPSTREAM_TIMEOUT=300ms. */
  tight: TestGateway;
  /** The rule folder both edges use, for a test's own edge. */
  rulesDir: string;
}

/** Registers the hooks that start and stop the setup; its fields are set once `beforeAll` has run. */
export function forwardingSetup(): ForwardingSetup {
  const setup = { routes: new Map<string, UpstreamHandler>() } as ForwardingSetup;
  let rules: ReturnType<typeof rulesDir> | undefined;
  beforeAll(async () => {
    rules = rulesDir(OPEN_RULES);
    setup.rulesDir = rules.dir;
    setup.agent = await startUpstream((req, res) =>
      (setup.routes.get(new URL(req.url ?? '/', 'http://x').pathname) ?? echoJson)(req, res),
    );
    setup.control = await startUpstream();
    const upstreams = { RULES_DIR: rules.dir, AGENT_SERVER_URL: setup.agent.url, CONTROL_PLANE_URL: setup.control.url };
    // Every client of these tests is 127.0.0.1, and one opens 300 streams at once: above the per-address cap's default.
    setup.main = await startTestGateway({ ...upstreams, HTTP_MAX_CONNECTIONS_PER_IP: '1000' });
    setup.tight = await startTestGateway({ ...upstreams, MAX_BODY: '1KiB', UPSTREAM_TIMEOUT: '300ms' });
  });
  afterAll(async () => {
    rules?.remove();
    await Promise.all([setup.main?.close(), setup.tight?.close()]);
    await Promise.all([setup.agent?.close(), setup.control?.close()]);
  });
  return setup;
}

export const seenById = (up: TestUpstream, id: string) => up.seen.filter((r) => r.headers['x-request-id'] === id);
