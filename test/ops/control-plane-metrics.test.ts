import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  processCrashed,
  processStarted,
  registerControlPlaneMetrics,
  revisionReached,
} from '../../src/metrics/control-plane-metrics.ts';

/** The value of one series in `registry`'s exposition (0 when absent). */
async function value(registry: Registry, series: string): Promise<number> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('control-plane metrics', () => {
  const registry = new Registry();
  registerControlPlaneMetrics(registry);
  registerControlPlaneMetrics(registry); // a second registration of the same registry is a no-op

  it('counts revisions by status and times a build from BUILDING to its end', async () => {
    const failed = await value(registry, 'gateway_revisions_total{status="BUILD_FAILED"}');
    const builds = await value(registry, 'gateway_build_duration_seconds_count{outcome="failed"}');
    const sum = await value(registry, 'gateway_build_duration_seconds_sum{outcome="failed"}');
    revisionReached({
      status: 'BUILD_FAILED',
      status_history: [
        { status: 'QUEUED', at: '2026-01-01T00:00:00.000Z' },
        { status: 'BUILDING', at: '2026-01-01T00:00:01.000Z' },
        { status: 'BUILD_FAILED', at: '2026-01-01T00:00:04.500Z' },
      ],
    });
    expect(await value(registry, 'gateway_revisions_total{status="BUILD_FAILED"}')).toBe(failed + 1);
    expect(await value(registry, 'gateway_build_duration_seconds_count{outcome="failed"}')).toBe(builds + 1);
    expect(await value(registry, 'gateway_build_duration_seconds_sum{outcome="failed"}')).toBeCloseTo(sum + 3.5);
  });

  it('shows the failure statuses and both build outcomes at zero before any build', async () => {
    const text = await registry.metrics();
    expect(text).toContain('gateway_revisions_total{status="DEPLOY_FAILED"}');
    expect(text).toContain('gateway_build_duration_seconds_count{outcome="succeeded"}');
  });

  it('counts a process up from its start until it exits, and its crashes', async () => {
    const up = await value(registry, 'gateway_deployment_processes');
    const starts = await value(registry, 'gateway_deployment_process_starts_total');
    const crashes = await value(registry, 'gateway_deployment_process_crashes_total');
    let exit!: () => void;
    processStarted({ exited: new Promise<void>((resolve) => (exit = resolve)) });
    expect(await value(registry, 'gateway_deployment_processes')).toBe(up + 1);
    processCrashed();
    exit();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await value(registry, 'gateway_deployment_processes')).toBe(up);
    expect(await value(registry, 'gateway_deployment_process_starts_total')).toBe(starts + 1);
    expect(await value(registry, 'gateway_deployment_process_crashes_total')).toBe(crashes + 1);
  });
});
