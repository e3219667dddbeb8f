import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { RevisionExit, RunningRevision } from '../../../src/services/revision-host/revision-host.ts';
import {
  CrashRestarts,
  type Served,
  type ServingSide,
} from '../../../src/services/control-plane/serving/crash-restarts.ts';
import type { ServingOptions } from '../../../src/services/control-plane/serving/serving-options.ts';
import { eventually } from './helpers.ts';

/**
 * A crashed revision process: started again by serving, unless its host restarts its processes itself
 * (`RevisionHost.restartsItself`), when the exit is only shown. Serving's side is a double recording what it is asked
 * (launches, route writes, serving errors); the real restarts are tested end to end in deployments/serving.test.ts.
 */

function processDouble(): RunningRevision & { crash(reason: string): void } {
  let crash: (exit: RevisionExit) => void = () => {};
  const exited = new Promise<RevisionExit>((resolve) => (crash = resolve));
  return {
    deploymentId: 'd1',
    revisionId: 'r1',
    target: 'unix:/tmp/double.sock',
    pid: undefined,
    exited,
    health: () => Promise.resolve(true),
    stop: () => Promise.resolve(),
    crash: (reason) => crash({ reason, requested: false }),
  };
}

function servingSideDouble(restartsItself: boolean) {
  const calls = { launches: 0, starting: 0, errors: [] as string[] };
  const deployment = { id: 'd1', tenant_id: 't1' };
  const o = {
    host: { kind: 'double', restartsItself },
    log: pino({ level: 'silent' }),
    restartDelayMs: 10,
    store: {
      getDeployment: () => Promise.resolve(deployment),
      getRevision: () => Promise.resolve({ id: 'r1' }),
      updateDeployment: (_t: string, _d: string, change: (cur: Record<string, unknown>) => unknown) => {
        const next = change({ ...deployment }) as { deployment: { serving_error?: string } } | null;
        if (next?.deployment.serving_error) calls.errors.push(next.deployment.serving_error);
        return Promise.resolve(null);
      },
    },
  } as unknown as ServingOptions;
  const side: ServingSide = {
    o,
    serves: () => true,
    launch: () => (calls.launches++, Promise.resolve(processDouble())),
    route: () => Promise.resolve(),
    starting: () => (calls.starting++, Promise.resolve()),
  };
  return { side, calls };
}

const served = (): Served => ({
  deploymentId: 'd1',
  tenantId: 't1',
  revisionId: 'r1',
  proc: null,
  crashes: 0,
  retired: false,
});

describe('crash restarts', () => {
  it('start the process again after a crash', async () => {
    const { side, calls } = servingSideDouble(false);
    const proc = processDouble();
    new CrashRestarts(side).supervise(served(), proc);
    proc.crash('exit code 1');
    await eventually(() => calls.launches === 1 || null, 2000, 'a restart');
    expect(calls.starting).toBe(1);
  });

  it('leave a host that restarts its processes itself alone: the exit is only shown', async () => {
    const { side, calls } = servingSideDouble(true);
    const proc = processDouble();
    new CrashRestarts(side).supervise(served(), proc);
    proc.crash('exit code 1');
    await eventually(() => calls.errors.length === 1 || null, 2000, 'the exit shown');
    await new Promise((r) => setTimeout(r, 100));
    expect([calls.launches, calls.starting]).toEqual([0, 0]);
    expect(calls.errors[0]).toMatch(/stopped \(exit code 1\); its host starts it again/);
  });
});
