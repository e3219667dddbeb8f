import { describe, expect, it } from 'vitest';
import {
  canMove,
  IllegalTransition,
  isFailed,
  isTerminal,
  moveRevision,
  PIPELINE,
  supersededStatus,
} from '../../../src/services/control-plane/revision-state.ts';
import { REVISION_STATUSES } from '../../../src/services/control-plane/types.ts';
import { deploymentRecord, revisionRecord } from './store-contract.ts';

describe('revision state machine', () => {
  const at = new Date('2026-01-01T00:00:00Z');

  it('the happy path moves one step at a time, each recorded with its time', () => {
    let r = revisionRecord(deploymentRecord(), 1);
    for (const [i, to] of PIPELINE.slice(1).entries()) {
      r = moveRevision(r, to, new Date(at.getTime() + i * 1000));
      expect(r.status).toBe(to);
      expect(r.updated_at).toBe(new Date(at.getTime() + i * 1000).toISOString());
    }
    expect(r.status_history.map((h) => h.status)).toEqual(PIPELINE);
    expect(() => moveRevision(revisionRecord(deploymentRecord(), 1), 'DEPLOYED', at)).toThrow(IllegalTransition);
  });

  it('failures belong to their phase; final statuses never move', () => {
    expect(canMove('BUILDING', 'BUILD_FAILED')).toBe(true);
    expect(canMove('BUILDING', 'DEPLOY_FAILED')).toBe(false);
    expect(canMove('DEPLOYING', 'DEPLOY_FAILED')).toBe(true);
    expect(canMove('QUEUED', 'CREATE_FAILED')).toBe(true);
    for (const s of REVISION_STATUSES) {
      if (isTerminal(s)) for (const to of REVISION_STATUSES) expect(canMove(s, to)).toBe(false);
    }
    expect(REVISION_STATUSES.filter(isTerminal)).toEqual([
      'CREATE_FAILED',
      'BUILD_FAILED',
      'DEPLOY_FAILED',
      'DEPLOYED',
      'SKIPPED',
      'INTERRUPTED',
      'UNKNOWN',
    ]);
    expect(REVISION_STATUSES.filter(isFailed)).toEqual(['CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED']);
  });

  it('a superseded revision is SKIPPED before work started, INTERRUPTED after; both moves are legal', () => {
    expect(supersededStatus('QUEUED')).toBe('SKIPPED');
    for (const s of ['AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING'] as const) {
      expect(supersededStatus(s)).toBe('INTERRUPTED');
      expect(canMove(s, 'INTERRUPTED')).toBe(true);
    }
    const stopped = moveRevision(revisionRecord(deploymentRecord(), 1), 'SKIPPED', at, 'SKIPPED: superseded');
    expect(stopped.status_history.at(-1)).toEqual({
      status: 'SKIPPED',
      at: at.toISOString(),
      message: 'SKIPPED: superseded',
    });
  });
});
