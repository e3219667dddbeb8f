import { Readable } from 'node:stream';
import { Hono, type Context } from 'hono';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { KeyRegistry } from '../../../keys/types.ts';
import { MemoryLimiter } from '../../../limiter/memory-limiter.ts';
import { checkRevisionToken } from '../../revision-host/revision-token.ts';
import { ApiError } from '../errors.ts';
import { jsonBodyLimit, notFoundJson, serviceErrorHandler } from '../../shared/http-errors.ts';
import { readJsonBody } from '../../shared/json-body.ts';
import type { ArtifactStore } from '../builds/artifacts.ts';
import type { ControlPlaneStore } from '../store.ts';
import type { StoredRevision } from '../types.ts';

/**
 * What a revision's pod asks the gateway (the Kubernetes host: pod-main.ts), on the internal listener only
 * (INTERNAL_PORT), never on the public edge, which routes no `/internal/*` here. Each request carries the revision's
 * bearer token (revision-token.ts); it opens only what that revision's record names:
 *
 * - `GET /internal/artifacts/<sha256>`: the revision's build (a gzipped tar), streamed; another sha256 answers 404.
 * - `POST /internal/keys/check` `{key}` → `{accepted}`: whether the API key belongs to the organisation of the
 *   revision's deployment (another organisation's key is refused, and its organisation is never named). Throttled per
 *   revision: a pod remembers answers (key-answers.ts), so its questions are few; many are a pod guessing keys.
 */
export interface InternalRoutesDeps {
  readonly store: Pick<ControlPlaneStore, 'getRevision' | 'getDeployment'>;
  readonly keys: Pick<KeyRegistry, 'findKey' | 'workspaceOrg'>;
  readonly artifacts: ArtifactStore | null;
  /** The key revision tokens are made with (`box.derive('revision-tokens')`). */
  readonly tokenKey: Buffer;
  readonly log: Logger;
  /** Key checks a revision may ask per second, in bursts of as many (on this replica); default 50. */
  readonly keyChecksPerSecond?: number;
  /** The throttle's clock (milliseconds, monotonic): injected by tests. */
  readonly now?: () => number;
}

/** A key is at most this long: a body larger than a few keys is not a key check. */
const KEY_CHECK_MAX_BYTES = 4096;
const keyCheckBody = z.object({ key: z.string().max(1024) });

export function internalApp(o: InternalRoutesDeps): Hono {
  const app = new Hono();
  const limiter = new MemoryLimiter({ maxKeys: 100_000, ...(o.now && { now: o.now }) });
  const perSecond = o.keyChecksPerSecond ?? 50;

  app.get('/internal/artifacts/:sha256', async (c) => {
    const rev = await revisionOf(o, c);
    const sha256 = c.req.param('sha256');
    // Only its own build: another revision's (or a made-up name) is not found, whatever ARTIFACTS_DIR holds.
    const opened = rev.artifact?.sha256 === sha256 && o.artifacts ? await o.artifacts.open(sha256) : null;
    if (opened === null) throw new ApiError(404, 'Not Found');
    c.req.raw.signal.addEventListener('abort', () => opened.stream.destroy(), { once: true });
    return c.body(Readable.toWeb(opened.stream) as ReadableStream, 200, {
      'content-type': 'application/gzip',
      'content-length': String(opened.bytes),
    });
  });

  app.post('/internal/keys/check', jsonBodyLimit(KEY_CHECK_MAX_BYTES), async (c) => {
    const rev = await revisionOf(o, c);
    const bucket = { key: `${rev.deployment_id}.${rev.id}`, capacity: perSecond, perSeconds: 1 };
    const outcome = limiter.consumeSync([bucket]);
    if (!outcome.allowed)
      throw new ApiError(429, 'Too many key checks from this revision; retry later.', {
        'Retry-After': String(Math.max(1, Math.ceil(outcome.retryAfterMs / 1000))),
      });
    const { key } = await readJsonBody(c, keyCheckBody, 'required');
    const [org, record] = await Promise.all([o.keys.workspaceOrg(rev.tenant_id), o.keys.findKey(key)]);
    return c.json({ accepted: org !== null && record !== null && record.org === org });
  });

  app.notFound(notFoundJson);
  app.onError(serviceErrorHandler(o.log, 'internal endpoints'));
  return app;
}

/** The revision the request's bearer token was made for, while it and its deployment exist; else 401. */
async function revisionOf(o: InternalRoutesDeps, c: Context): Promise<StoredRevision> {
  const header = c.req.header('authorization') ?? '';
  const token = /^Bearer (\S+)$/i.exec(header)?.[1];
  if (token === undefined) throw unauthorized('Missing bearer token: send the revision token.');
  const who = checkRevisionToken(o.tokenKey, token);
  if (who === null) throw unauthorized('Invalid revision token.');
  const rev = await o.store.getRevision(who.deploymentId, who.revisionId);
  // A deleted deployment's tokens open nothing (its records went with it).
  const d = rev && (await o.store.getDeployment(rev.tenant_id, rev.deployment_id));
  if (!rev || !d) throw unauthorized('Invalid revision token.');
  return rev;
}

const unauthorized = (detail: string) => new ApiError(401, detail, { 'WWW-Authenticate': 'Bearer' });
