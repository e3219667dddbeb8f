import { randomUUID } from 'node:crypto';
import type { RevisionStatus, StoredDeployment, StoredRevision } from './types.ts';

/**
 * The revision state machine. The happy path is
 * QUEUED → AWAITING_BUILD → BUILDING → AWAITING_DEPLOY → DEPLOYING → DEPLOYED;
 * each step may fail into the *_FAILED value of its phase, and a revision
 * superseded (a newer revision, a delete, a restart) before it finished
 * becomes SKIPPED when no work had started, INTERRUPTED otherwise.
 */
const NEXT: Readonly<Record<RevisionStatus, readonly RevisionStatus[]>> = {
  CREATING: ['QUEUED', 'CREATE_FAILED', 'SKIPPED'],
  QUEUED: ['AWAITING_BUILD', 'CREATE_FAILED', 'SKIPPED'],
  AWAITING_BUILD: ['BUILDING', 'BUILD_FAILED', 'SKIPPED', 'INTERRUPTED'],
  BUILDING: ['AWAITING_DEPLOY', 'BUILD_FAILED', 'INTERRUPTED'],
  AWAITING_DEPLOY: ['DEPLOYING', 'DEPLOY_FAILED', 'INTERRUPTED'],
  DEPLOYING: ['DEPLOYED', 'DEPLOY_FAILED', 'INTERRUPTED'],
  CREATE_FAILED: [],
  BUILD_FAILED: [],
  DEPLOY_FAILED: [],
  DEPLOYED: [],
  SKIPPED: [],
  INTERRUPTED: [],
  UNKNOWN: [],
};

/** The happy path, in order. */
export const PIPELINE: readonly RevisionStatus[] = [
  'QUEUED',
  'AWAITING_BUILD',
  'BUILDING',
  'AWAITING_DEPLOY',
  'DEPLOYING',
  'DEPLOYED',
];

export const isTerminal = (status: RevisionStatus): boolean => NEXT[status].length === 0;
export const isFailed = (status: RevisionStatus): boolean => status.includes('FAILED');
export const canMove = (from: RevisionStatus, to: RevisionStatus): boolean => NEXT[from].includes(to);

/** The status a revision takes when it is superseded in `status`: SKIPPED before work started, INTERRUPTED after. */
export function supersededStatus(status: RevisionStatus): RevisionStatus {
  return status === 'QUEUED' || status === 'CREATING' ? 'SKIPPED' : 'INTERRUPTED';
}

export class IllegalTransition extends Error {
  constructor(
    readonly from: RevisionStatus,
    readonly to: RevisionStatus,
  ) {
    super(`revision cannot move from ${from} to ${to}`);
    this.name = 'IllegalTransition';
  }
}

/** `revision` moved to `to` at `at`, the move recorded in its history; `message` is kept for failures and stops. */
export function moveRevision(
  revision: StoredRevision,
  to: RevisionStatus,
  at: Date,
  message: string | null = null,
  changes: Partial<
    Pick<
      StoredRevision,
      'source_revision_config' | 'graphs' | 'auth_path' | 'app_env' | 'build_log' | 'build_log_offset' | 'build_steps'
    >
  > = {},
): StoredRevision {
  if (!canMove(revision.status, to)) throw new IllegalTransition(revision.status, to);
  const when = at.toISOString();
  return {
    ...revision,
    ...changes,
    status: to,
    status_message: message,
    updated_at: when,
    status_history: [
      ...revision.status_history,
      message === null ? { status: to, at: when } : { status: to, at: when, message },
    ],
  };
}

/** A new revision of `d`, number `seq`, at its first status (QUEUED). */
export function queuedRevision(d: StoredDeployment, seq: number, now: string): StoredRevision {
  return {
    id: randomUUID(),
    deployment_id: d.id,
    tenant_id: d.tenant_id,
    region: d.region,
    seq,
    created_at: now,
    updated_at: now,
    status: 'QUEUED',
    status_message: null,
    source: d.source,
    source_revision_config: { ...d.source_revision_config, repo_commit_sha: null },
    status_history: [{ status: 'QUEUED', at: now }],
    graphs: null,
    auth_path: null,
  };
}

/**
 * Outside the state machine, for the revision a deployment serves: DEPLOYED means it runs. When it cannot be started
 * again after a restart (its build gone, its secrets sealed with another SECRETS_KEY, its app failing to load), it
 * becomes DEPLOY_FAILED with why; when a later start serves it again (SECRETS_KEY put back), DEPLOYED again. Both
 * moves are in its history. Only the deployment's active revision moves so: a revision that failed its first deploy
 * never became active, and stays DEPLOY_FAILED.
 */
export function unservableRevision(revision: StoredRevision, at: Date, message: string): StoredRevision | null {
  if (revision.status !== 'DEPLOYED') return null;
  return withStatus(revision, 'DEPLOY_FAILED', at, message);
}

export function servedAgainRevision(revision: StoredRevision, at: Date): StoredRevision | null {
  if (revision.status !== 'DEPLOY_FAILED') return null;
  return withStatus(revision, 'DEPLOYED', at, null);
}

function withStatus(revision: StoredRevision, to: RevisionStatus, at: Date, message: string | null): StoredRevision {
  const when = at.toISOString();
  return {
    ...revision,
    status: to,
    status_message: message,
    updated_at: when,
    status_history: [
      ...revision.status_history,
      message === null ? { status: to, at: when } : { status: to, at: when, message },
    ],
  };
}
