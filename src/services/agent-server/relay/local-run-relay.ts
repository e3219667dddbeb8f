import type { Frame } from '../runs/frames.ts';
import type { FollowOptions, RelayedCancel, RunRelay } from './run-relay.ts';

/**
 * The relay of a server alone (memory store, or a store no other server shares): its runs are all here, so there is
 * nothing to publish and nobody else to tell (every thread is its own to claim); following a run of another server is not possible (null).
 */
export class LocalRunRelay implements RunRelay {
  readonly shared = false;
  started(_runId: string, _threadId: string): void {}
  publish(_runId: string, _frame: Frame): void {}
  ended(_runId: string): void {}
  follow(_runId: string, _options: FollowOptions): AsyncIterable<Frame> | null {
    return null;
  }
  async cancel(_runId: string, _reason: RelayedCancel): Promise<void> {}
  onCancel(_handler: (runId: string, reason: RelayedCancel) => void): void {}
  async claimThread(_threadId: string): Promise<boolean> {
    return true;
  }
  async awaitThread(_threadId: string, _signal: AbortSignal): Promise<void> {}
  releaseThread(_threadId: string): void {}
  async live(): Promise<string[]> {
    return [];
  }
  async forget(_runId: string): Promise<void> {}
  async close(): Promise<void> {}
}
