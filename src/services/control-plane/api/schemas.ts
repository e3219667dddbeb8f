import { z } from 'zod';
import { DEPLOYMENT_STATUSES, DEPLOYMENT_TYPES, isGitSource, REVISION_STATUSES, SOURCES } from '../types.ts';

/**
 * Request bodies and queries. Unknown fields are ignored (scripts written
 * for the public API may send more than this service uses); every field it
 * does use is checked, and a failure answers 422 with `loc`, `msg`, `type`.
 */

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A branch, tag or commit: no whitespace, control characters or git's forbidden characters, no leading "-". */
const GIT_REF = /^(?!-)(?!.*\.\.)[^\s\x00-\x1f\x7f~^:?*[\\]+$/;
/**
 * Git URLs this machine may fetch: http(s), ssh, git, file URLs, scp-like `user@host:path`, or an absolute local path.
 */
const REPO_URL = /^(?:(?:https?|ssh|git|file):\/\/\S+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\S+|\/\S*)$/;

const repoUrl = z
  .string()
  .max(2048)
  .regex(
    REPO_URL,
    'must be an https://, http://, ssh://, git:// or file:// URL, user@host:path, or an absolute local path',
  );
const repoRef = z
  .string()
  .min(1)
  .max(256)
  .regex(GIT_REF, 'must be a branch, tag or commit (no spaces, "..", "~", "^", ":", "?", "*", "[" or leading "-")');
const configPath = z
  .string()
  .min(1)
  .max(512)
  .refine(
    (p) => !p.startsWith('/') && !p.split('/').includes('..') && !p.includes('\\'),
    'must be a relative path inside the repository',
  );
const imageUri = z.string().min(1).max(1024).regex(/^\S+$/, 'must not contain whitespace');

const secret = z.object({
  name: z
    .string()
    .max(256)
    .regex(ENV_NAME, 'must be an environment variable name (letters, digits and "_", not starting with a digit)'),
  value: z.string().max(65_536),
});

const secrets = z
  .array(secret)
  .max(200)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      if (seen.has(s.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate secret name "${s.name}"` });
      seen.add(s.name);
    });
  });

const nullableText = (max: number) => z.string().max(max).nullish();

/** `source_config`: every field optional; on create the defaults fill in, on patch only given fields change. */
const sourceConfig = z.object({
  integration_id: nullableText(256),
  repo_url: repoUrl.nullish(),
  deployment_type: z.enum(DEPLOYMENT_TYPES).optional(),
  build_on_push: z.boolean().optional(),
  custom_url: nullableText(2048),
  resource_spec: z.record(z.string(), z.unknown()).nullish(),
});

const sourceRevisionConfig = z.object({
  repo_ref: repoRef.nullish(),
  langgraph_config_path: configPath.nullish(),
  image_uri: imageUri.nullish(),
});

export const createBody = z
  .object({
    name: z.string().trim().min(1).max(128),
    source: z.enum(SOURCES),
    source_config: sourceConfig.default({}),
    source_revision_config: sourceRevisionConfig.default({}),
    secrets: secrets.default([]),
  })
  .superRefine((body, ctx) => {
    const need = (path: string[], message: string) =>
      ctx.addIssue({ code: 'custom', path, message, params: { type: 'missing' } });
    if (isGitSource(body.source)) {
      if (!body.source_config.repo_url)
        need(['source_config', 'repo_url'], `Field required for source "${body.source}"`);
      if (!body.source_revision_config.repo_ref)
        need(['source_revision_config', 'repo_ref'], `Field required for source "${body.source}"`);
    } else if (!body.source_revision_config.image_uri) {
      need(['source_revision_config', 'image_uri'], `Field required for source "${body.source}"`);
    }
  });

export const patchBody = z.object({
  // Present only to be refused when they differ from the stored values (400).
  name: z.string().optional(),
  source: z.string().optional(),
  source_config: sourceConfig.optional(),
  source_revision_config: sourceRevisionConfig.nullish(),
  secrets: secrets.optional(),
});

export type CreateBody = z.infer<typeof createBody>;
export type PatchBody = z.infer<typeof patchBody>;

/** A query value given once, as a comma-separated list, or repeated: one flat list. */
const csv = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (v) =>
      v === undefined
        ? undefined
        : (Array.isArray(v) ? v : [v])
            .flatMap((s) => String(s).split(','))
            .map((s) => s.trim())
            .filter((s) => s !== ''),
    z.array(item).optional(),
  );

const paging = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
};

export const listDeploymentsQuery = z.object({
  ...paging,
  name_contains: z.string().max(128).optional(),
  status: csv(z.enum(DEPLOYMENT_STATUSES)),
  deployment_type: csv(z.enum(DEPLOYMENT_TYPES)),
  deployment_ids: csv(z.string().max(64)),
});

export const listRevisionsQuery = z.object({
  ...paging,
  status: csv(z.enum(REVISION_STATUSES)),
});

export type ListDeploymentsQuery = z.infer<typeof listDeploymentsQuery>;
export type ListRevisionsQuery = z.infer<typeof listRevisionsQuery>;

export { validationIssues } from '../../shared/validation-issues.ts';

/** `?follow=true`: the answer is a stream of server-sent events. */
const flag = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');

export const buildLogQuery = z.object({ follow: flag });

/** `since`: an entry's `id` (a cursor, digits) or a time (ISO 8601, e.g. `2026-11-27T12:00:00Z`). */
const since = z
  .string()
  .max(64)
  .transform((v, ctx) => {
    if (/^\d{1,16}$/.test(v)) return { cursor: Number(v) };
    const time = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
    if (Number.isNaN(time)) {
      ctx.addIssue({ code: 'custom', message: 'must be the id of a log entry or an ISO 8601 time' });
      return z.NEVER;
    }
    return { time };
  });

export const logsQuery = z.object({
  since: since.optional(),
  limit: z.coerce.number().int().min(1).max(2000).default(100),
  follow: flag,
});
