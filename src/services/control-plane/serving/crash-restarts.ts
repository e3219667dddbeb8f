import type { RunningRevision } from '../../revision-host/revision-host.ts';
import type { StoredDeployment, StoredRevision } from '../types.ts';
import { processCrashed } from '../../../metrics/control-plane-metrics.ts';
import { clearServingError, showServingError } from './serving-error.ts';
import type { ServingOptions } from './serving-options.ts';

/**
 * A served revision's process that ends without being asked is started again, after 0.5 s, 1 s, 2 s, ... up to 30 s;
 * after three crashes in a row the deployment says so (`serving_error`), and a process that lived 30 s counts as
 * healthy again; until the process runs again, the deployment's url answers 503 "starting". A host that restarts its
 * processes itself (`RevisionHost.restartsItself`) is left to it: the route stays and the exit is only shown.
 */
export interface Served {
  readonly deploymentId: string;
  readonly tenantId: string;
  readonly revisionId: string;
  proc: RunningRevision | null;
  crashes: number;
  retired: boolean;
  timer?: NodeJS.Timeout;
}

/** What serving.ts gives the restarts: whether `s` still serves, and its launch and route writes. */
export interface ServingSide {
  readonly o: ServingOptions;
  /** Whether `s` is still the served revision of its deployment and serving is open. */
  serves(s: Served): boolean;
  launch(d: StoredDeployment, rev: StoredRevision): Promise<RunningRevision>;
  route(s: Served, proc: RunningRevision): Promise<void>;
  starting(d: Pick<StoredDeployment, 'id' | 'tenant_id'>, revisionId: string): Promise<void>;
}

/** Crashes in a row before the deployment shows it (`serving_error`). */
const SHOWN_AFTER_CRASHES = 3;
/** A process that lived this long was healthy: its crash count starts again. */
const HEALTHY_AFTER_MS = 30_000;
const MAX_RESTART_DELAY_MS = 30_000;

export class CrashRestarts {
  constructor(private readonly side: ServingSide) {}

  /** Watches `proc`, the process of `s`: an exit nobody asked for restarts it (or is shown, see above). */
  supervise(s: Served, proc: RunningRevision): void {
    const { o } = this.side;
    const started = Date.now();
    void proc.exited.then((exit) => {
      if (exit.requested || s.retired || !this.side.serves(s)) return;
      processCrashed();
      if (o.host.restartsItself) {
        // Its host starts it again behind the same target: the route stays, the exit is shown.
        o.log.error(
          { deploymentId: s.deploymentId, reason: exit.reason },
          'revision process stopped (host restarts it)',
        );
        void showServingError(
          o,
          { id: s.deploymentId, tenant_id: s.tenantId },
          `the process of revision ${s.revisionId} stopped (${exit.reason}); its host starts it again`,
        );
        return;
      }
      s.proc = null;
      // Until it runs again its url answers 503 "starting", here at once even when the write to a shared table fails.
      this.side
        .starting({ id: s.deploymentId, tenant_id: s.tenantId }, s.revisionId)
        .catch((err: unknown) =>
          o.log.warn({ err, deploymentId: s.deploymentId }, 'route marked starting here only: its write failed'),
        );
      if (Date.now() - started >= HEALTHY_AFTER_MS) s.crashes = 0;
      s.crashes++;
      this.crashed(s, exit.reason);
    });
  }

  private crashed(s: Served, reason: string): void {
    const { o } = this.side;
    const delay = Math.min((o.restartDelayMs ?? 500) * 2 ** (s.crashes - 1), MAX_RESTART_DELAY_MS);
    const fields = { deploymentId: s.deploymentId, revisionId: s.revisionId, reason, crashes: s.crashes, delay };
    o.log.error(fields, 'revision process stopped unexpectedly; restarting');
    if (s.crashes >= SHOWN_AFTER_CRASHES) {
      void showServingError(
        o,
        { id: s.deploymentId, tenant_id: s.tenantId },
        `the process of revision ${s.revisionId} keeps stopping (${s.crashes} times in a row, last: ${reason}); next restart in ${Math.round(delay / 100) / 10} s`,
      );
    }
    s.timer = setTimeout(() => void this.restart(s), delay);
    s.timer.unref();
  }

  private async restart(s: Served): Promise<void> {
    const { o } = this.side;
    if (s.retired || !this.side.serves(s)) return;
    try {
      const d = await o.store.getDeployment(s.tenantId, s.deploymentId);
      const rev = d && (await o.store.getRevision(s.deploymentId, s.revisionId));
      if (!d || !rev || s.retired) return;
      const proc = await this.side.launch(d, rev);
      if (s.retired || !this.side.serves(s)) return void (await proc.stop(0));
      s.proc = proc;
      await this.side.route(s, proc);
      this.supervise(s, proc);
      o.log.info({ deploymentId: s.deploymentId, revisionId: s.revisionId, target: proc.target }, 'revision restarted');
      const healthy = setTimeout(() => {
        if (s.proc !== proc || s.retired) return;
        s.crashes = 0;
        void clearServingError(o, d);
      }, HEALTHY_AFTER_MS);
      healthy.unref();
    } catch (err) {
      s.crashes++;
      this.crashed(s, (err as Error).message);
    }
  }
}
