import type { RunOutcome, RunSpec } from './run-handle.ts';

/**
 * The body of a run's webhook call, as the official server builds it (langgraph-api `webhook.mts`): the run record with
 * its final `status`, `run_started_at`, `run_ended_at`, `webhook_sent_at`, the final state `values`, and `error` (the
 * failure's message) when it failed. `startedAt`: when the run's turn came (null: it ended before, e.g. cancelled
 * while queued; then its end time stands for both).
 */
export function webhookPayload(spec: RunSpec, outcome: RunOutcome, startedAt: string | null): Record<string, unknown> {
  const endedAt = new Date().toISOString();
  return {
    ...spec.run,
    status: outcome.status,
    updated_at: endedAt,
    run_started_at: startedAt ?? endedAt,
    run_ended_at: endedAt,
    webhook_sent_at: new Date().toISOString(),
    values: outcome.values ?? null,
    ...(outcome.error ? { error: outcome.error.message } : {}),
  };
}
