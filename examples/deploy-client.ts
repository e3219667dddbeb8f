/**
 * The control plane's example client flow, for CI/CD jobs:
 *
 *   1. POST /v2/deployments, read `id` and `latest_revision_id`;
 *   2. poll that revision until DEPLOYED or a status containing FAILED,
 *      following its build log meanwhile (`build_log?follow=true`) to show
 *      each build step as it starts and ends;
 *      then read the deployment's `url` and call it with the LangGraph SDK
 *      (the first assistant, one run with --input);
 *   3. PATCH the deployment with a new `repo_ref` (a new revision);
 *   4. read the latest revision from the revision list again and poll it;
 *   5. DELETE the deployment.
 *
 *   npx tsx examples/deploy-client.ts --repo-url <git url or path> [options]
 *
 * Options (environment variable in brackets):
 *   --url            control plane base URL, e.g. the gateway [CONTROL_PLANE_URL] (http://localhost:8080)
 *   --api-key        X-Api-Key [API_KEY]                       (required)
 *   --tenant-id      X-Tenant-Id, the workspace [TENANT_ID]     (required)
 *   --repo-url       repository to deploy [REPO_URL]            (required)
 *   --ref            first repo_ref [REPO_REF] (main)
 *   --next-ref       repo_ref of the patch [NEXT_REPO_REF] (same as --ref)
 *   --config-path    langgraph_config_path [LANGGRAPH_CONFIG_PATH] (langgraph.json)
 *   --name           deployment name [DEPLOYMENT_NAME] (deploy-client-<time>)
 *   --poll-interval  seconds between polls [POLL_INTERVAL_SECONDS] (60)
 *   --timeout        seconds before giving up on a revision [POLL_TIMEOUT_SECONDS] (1800)
 *   --input          JSON input of the run at the url [RUN_INPUT] ({"messages":[{"role":"user","content":"hello"}]})
 *   --header         'name: value' sent with each call to the deployment's url, e.g. the x-api-key its auth handler
 *                    wants (repeatable; default: x-api-key is --api-key) [DEPLOYMENT_HEADERS, lines]
 *   --secret         NAME=VALUE, a secret of the deployment (repeatable) [DEPLOYMENT_SECRETS, lines]
 *   --keep           do not delete the deployment at the end (nor after a failure)
 *   --help           print this help
 *
 * Output: one line per event on stdout (`created`, `status`, `step`, `deployed`,
 * `url`, `called`, `patched`, `deleted`, then `result ok`); problems on stderr.
 * Exit status: 0 both revisions DEPLOYED (and the deployment deleted),
 * 1 a revision failed (status containing FAILED, or SKIPPED/INTERRUPTED,
 * which never change again), 2 usage, 3 timed out, 4 an API call failed.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@langchain/langgraph-sdk';

export const EXIT = { ok: 0, failed: 1, usage: 2, timeout: 3, api: 4 } as const;

interface Out {
  log(line: string): void;
  err(line: string): void;
}

interface Revision {
  id: string;
  status: string;
  status_message?: string | null;
}

class ApiCallFailed extends Error {}

const stdio: Out = { log: (line) => console.log(line), err: (line) => console.error(line) };

export async function deployClient(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  out: Out = stdio,
): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.log(usage());
    return EXIT.ok;
  }
  let opts: ReturnType<typeof options>;
  try {
    opts = options(argv, env);
  } catch (err) {
    out.err(`deploy-client: ${(err as Error).message}`);
    return EXIT.usage;
  }
  const { base, headers, pollMs, timeoutMs } = opts;
  const call = async (method: string, path: string, body?: unknown, expected = 200): Promise<any> => {
    const res = await fetch(base + path, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status !== expected)
      throw new ApiCallFailed(`${method} ${path}: expected ${expected}, got ${res.status}: ${text.slice(0, 500)}`);
    return text === '' ? null : JSON.parse(text);
  };

  /**
   * Polls until DEPLOYED, a failure, or the timeout; transient errors (429, 5xx, network) are retried on the next tick.
   */
  const poll = async (deploymentId: string, revisionId: string): Promise<'ok' | 'failed' | 'timeout'> => {
    const stop = new AbortController();
    const following = followBuild(
      base + `/v2/deployments/${deploymentId}/revisions/${revisionId}`,
      headers,
      out,
      stop.signal,
    );
    try {
      return await pollUntilDone(deploymentId, revisionId, following);
    } finally {
      stop.abort();
      await following;
    }
  };
  const pollUntilDone = async (
    deploymentId: string,
    revisionId: string,
    following: Promise<void>,
  ): Promise<'ok' | 'failed' | 'timeout'> => {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    // Once the build log says the build ended, the next poll need not wait.
    let ended: Promise<unknown> = following;
    for (;;) {
      try {
        const rev = (await call('GET', `/v2/deployments/${deploymentId}/revisions/${revisionId}`)) as Revision;
        if (rev.status !== last) out.log(`status revision=${revisionId} ${rev.status}`);
        last = rev.status;
        if (rev.status === 'DEPLOYED') return 'ok';
        if (rev.status.includes('FAILED') || rev.status === 'SKIPPED' || rev.status === 'INTERRUPTED') {
          out.err(`revision ${revisionId} ended ${rev.status}${rev.status_message ? `: ${rev.status_message}` : ''}`);
          return 'failed';
        }
      } catch (err) {
        const transient = !(err instanceof ApiCallFailed) || / got (429|5\d\d):/.test(err.message);
        if (!transient) throw err;
        out.err(`poll failed, retrying: ${(err as Error).message}`);
      }
      if (Date.now() + pollMs > deadline) {
        out.err(`revision ${revisionId} not DEPLOYED within ${timeoutMs / 1000} s (last status ${last || 'unknown'})`);
        return 'timeout';
      }
      await Promise.race([new Promise((r) => setTimeout(r, pollMs)), ended]);
      ended = new Promise(() => undefined);
    }
  };

  let deploymentId: string | null = null;
  let code: number = EXIT.ok;
  try {
    const created = await call(
      'POST',
      '/v2/deployments',
      {
        name: opts.name,
        source: 'github',
        source_config: {
          repo_url: opts.repoUrl,
          deployment_type: 'dev',
          build_on_push: false,
          custom_url: null,
          resource_spec: null,
        },
        source_revision_config: { repo_ref: opts.ref, langgraph_config_path: opts.configPath, image_uri: null },
        secrets: opts.secrets,
      },
      201,
    );
    deploymentId = created.id as string;
    out.log(`created deployment=${deploymentId} revision=${created.latest_revision_id}`);
    let outcome = await poll(deploymentId, created.latest_revision_id);
    if (outcome === 'ok') {
      out.log(`deployed revision=${created.latest_revision_id}`);
      const { url } = (await call('GET', `/v2/deployments/${deploymentId}`)) as { url: string | null };
      if (url) {
        out.log(`url ${url} docs=${url}/docs`);
        await callDeployment(url, opts.headers['x-api-key'], opts.deploymentHeaders, opts.input, out);
      }
      await call('PATCH', `/v2/deployments/${deploymentId}`, {
        source_revision_config: { repo_ref: opts.nextRef, langgraph_config_path: opts.configPath },
      });
      const revisions = await call('GET', `/v2/deployments/${deploymentId}/revisions`);
      const latest = revisions.resources[0] as Revision;
      out.log(`patched deployment=${deploymentId} revision=${latest.id}`);
      outcome = await poll(deploymentId, latest.id);
      if (outcome === 'ok') out.log(`deployed revision=${latest.id}`);
    }
    code = outcome === 'ok' ? EXIT.ok : outcome === 'failed' ? EXIT.failed : EXIT.timeout;
  } catch (err) {
    out.err(`deploy-client: ${(err as Error).message}`);
    code = EXIT.api;
  }
  if (deploymentId !== null && !opts.keep) {
    try {
      await call('DELETE', `/v2/deployments/${deploymentId}`, undefined, 204);
      out.log(`deleted deployment=${deploymentId}`);
    } catch (err) {
      out.err(`deploy-client: ${(err as Error).message}`);
      if (code === EXIT.ok) code = EXIT.api;
    }
  }
  out.log(
    `result ${code === EXIT.ok ? 'ok' : (Object.keys(EXIT) as (keyof typeof EXIT)[]).find((k) => EXIT[k] === code)} exit=${code}`,
  );
  return code;
}

/**
 * The revision's build steps as they happen (`step revision=<id> clone done in 0.12 s`), from its build log followed
 * as server-sent events; settles when the build ends or `signal` aborts. A server without it is no error: the polls
 * still tell the status.
 */
async function followBuild(revisionUrl: string, headers: Record<string, string>, out: Out, signal: AbortSignal) {
  const revisionId = revisionUrl.slice(revisionUrl.lastIndexOf('/') + 1);
  try {
    const res = await fetch(`${revisionUrl}/build_log?follow=true`, { headers, signal });
    if (!res.ok || !res.headers.get('content-type')?.startsWith('text/event-stream') || !res.body) return;
    let buffer = '';
    for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (signal.aborted || event === 'end') return;
        if (event !== 'step' || data === undefined) continue;
        const step = JSON.parse(data) as { name: string; status: string; duration_ms: number | null; message?: string };
        const took = step.duration_ms === null ? '' : ` in ${(step.duration_ms / 1000).toFixed(2)} s`;
        out.log(
          `step revision=${revisionId} ${step.name} ${step.status}${took}${step.message ? `: ${step.message}` : ''}`,
        );
      }
    }
  } catch {
    // Aborted, or the stream broke: the polls go on.
  }
}

/** One run of the deployment's first assistant, with the unmodified SDK, at the deployment's url. */
async function callDeployment(
  url: string,
  apiKey: string,
  headers: Record<string, string>,
  input: Record<string, unknown> | null,
  out: Out,
): Promise<void> {
  // An x-api-key among --header replaces the control plane's (the SDK sends `apiKey` as x-api-key).
  const { 'x-api-key': appKey, ...others } = headers;
  const sdk = new Client({ apiUrl: url, apiKey: appKey ?? apiKey, defaultHeaders: others });
  let assistants;
  try {
    assistants = await sdk.assistants.search({ limit: 1 });
  } catch (err) {
    throw new ApiCallFailed(`calling ${url}: ${(err as Error).message}`);
  }
  const assistant = assistants[0];
  if (!assistant) throw new ApiCallFailed(`${url}: the deployment has no assistant`);
  let values: unknown;
  try {
    values = await sdk.runs.wait(null, assistant.assistant_id, { input });
  } catch (err) {
    throw new ApiCallFailed(`run of ${assistant.graph_id} at ${url}: ${(err as Error).message}`);
  }
  const messages = (values as { messages?: { content?: unknown }[] } | null)?.messages;
  const answer = messages?.length ? messages[messages.length - 1]!.content : values;
  out.log(`called graph=${assistant.graph_id} answer=${JSON.stringify(answer).slice(0, 300)}`);
}

/** The comment at the top of this file. */
function usage(): string {
  const text = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  const comment = /\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  return comment
    .split('\n')
    .map((l) => l.replace(/^ \* ?/, ''))
    .join('\n')
    .trim();
}

function options(argv: readonly string[], env: NodeJS.ProcessEnv) {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      url: { type: 'string' },
      'api-key': { type: 'string' },
      'tenant-id': { type: 'string' },
      'repo-url': { type: 'string' },
      ref: { type: 'string' },
      'next-ref': { type: 'string' },
      'config-path': { type: 'string' },
      name: { type: 'string' },
      'poll-interval': { type: 'string' },
      timeout: { type: 'string' },
      input: { type: 'string' },
      header: { type: 'string', multiple: true },
      secret: { type: 'string', multiple: true },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const pick = (flag: string | undefined, variable: string, fallback?: string): string => {
    const v = flag ?? env[variable] ?? fallback;
    if (v === undefined || v === '')
      throw new Error(`--${variable.toLowerCase().replaceAll('_', '-')} (or ${variable}) is required`);
    return v;
  };
  const seconds = (flag: string | undefined, variable: string, fallback: string): number => {
    const v = pick(flag, variable, fallback);
    const n = Number(v);
    if (!/^\d+(\.\d+)?$/.test(v) || !(n > 0))
      throw new Error(`${variable} must be a positive number of seconds, got "${v}"`);
    return n * 1000;
  };
  const ref = pick(values.ref, 'REPO_REF', 'main');
  return {
    base: pick(values.url, 'CONTROL_PLANE_URL', 'http://localhost:8080').replace(/\/+$/, ''),
    headers: { 'x-api-key': pick(values['api-key'], 'API_KEY'), 'x-tenant-id': pick(values['tenant-id'], 'TENANT_ID') },
    repoUrl: pick(values['repo-url'], 'REPO_URL'),
    ref,
    nextRef: pick(values['next-ref'], 'NEXT_REPO_REF', ref),
    configPath: pick(values['config-path'], 'LANGGRAPH_CONFIG_PATH', 'langgraph.json'),
    name: pick(values.name, 'DEPLOYMENT_NAME', `deploy-client-${new Date().toISOString().replace(/[:.]/g, '-')}`),
    pollMs: seconds(values['poll-interval'], 'POLL_INTERVAL_SECONDS', '60'),
    timeoutMs: seconds(values.timeout, 'POLL_TIMEOUT_SECONDS', '1800'),
    input: json(pick(values.input, 'RUN_INPUT', '{"messages":[{"role":"user","content":"hello"}]}'), 'RUN_INPUT'),
    keep: values.keep,
    deploymentHeaders: headerList(values.header ?? lines(env.DEPLOYMENT_HEADERS)),
    secrets: secretList(values.secret ?? lines(env.DEPLOYMENT_SECRETS)),
  };
}

const lines = (v: string | undefined) => (v ?? '').split('\n').filter((l) => l.trim() !== '');

/** `name: value` lines as headers (names lowercased). */
function headerList(given: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of given) {
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`--header must look like 'name: value', got "${line}"`);
    out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

/** `NAME=VALUE` lines as the deployment's secrets. */
function secretList(given: readonly string[]): { name: string; value: string }[] {
  return given.map((line) => {
    const i = line.indexOf('=');
    // Never echoed: the line holds a secret.
    if (i <= 0) throw new Error('--secret must look like NAME=VALUE (a line without a name before "=")');
    return { name: line.slice(0, i), value: line.slice(i + 1) };
  });
}

function json(text: string, variable: string): Record<string, unknown> | null {
  try {
    return JSON.parse(text) as Record<string, unknown> | null;
  } catch {
    throw new Error(`${variable} must be JSON, got ${text.slice(0, 100)}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await deployClient(process.argv.slice(2));
}
