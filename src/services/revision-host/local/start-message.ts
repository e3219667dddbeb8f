import { join } from 'node:path';
import type { ProcessControl } from './protocol.ts';
import type { LocalProcessHostOptions } from './local-process-host.ts';
import type { RevisionSpec } from '../revision-host.ts';

/** The operator's settings a revision's process starts with (never its own environment's). */
type StartSettings = Pick<LocalProcessHostOptions, 'logLevel' | 'heartbeatMs' | 'ttlSweepMs' | 'webhookHostsAllowed'>;

/** The `start` message a revision's process gets on its control channel: what to serve, and the operator's settings. */
export function startMessage(
  spec: RevisionSpec,
  redisSocket: string | null,
  o: StartSettings,
): Omit<ProcessControl, 'listenFd'> {
  return {
    type: 'start',
    deploymentId: spec.deploymentId,
    revisionId: spec.revisionId,
    configPath: join(spec.appDir, spec.configPath),
    sourcePrefix: spec.sourcePrefix ?? '',
    org: spec.org,
    redisSocket,
    dataPrefix: spec.dataPrefix,
    logLevel: o.logLevel ?? 'info',
    heartbeatMs: o.heartbeatMs ?? 10_000,
    ttlSweepMs: o.ttlSweepMs ?? 60_000,
    webhookHostsAllowed: o.webhookHostsAllowed ?? [],
  };
}
