import type { BaseCheckpointSaver } from '@langchain/langgraph';
import type { AgentStore } from '../../../../src/services/agent-server/store/agent-store.ts';
import { eventually, type sdk, type Stack } from '../helpers.ts';

/**
 * Updating and deleting assistants and threads, and controlling runs
 * (cancel, join, join stream, delete), with the public JS client through
 * the edge. Run once per store (memory, Redis): the backend must not
 * change an answer. `leftovers` lists what the backend still keeps of a
 * deleted thread (Redis keys), when it can tell.
 */
export interface LifecycleBackend {
  readonly store: AgentStore;
  readonly checkpointer: BaseCheckpointSaver;
  leftovers?(threadId: string): Promise<string[]>;
}

export type Chunk = { event: string; data: any; id?: string };
export const waitFor = (check: () => boolean) => eventually(async () => (check() ? true : undefined));

/** What the case files share: the stack of the backend under test, a client with a new key, a slow run. */
export interface LifecycleContext {
  readonly stack: Stack;
  readonly backend: LifecycleBackend;
  client(): ReturnType<typeof sdk>['client'];
  slowRun(
    c: ReturnType<typeof sdk>['client'],
    threadId: string,
    options?: { waitMs?: number; strategy?: 'enqueue' },
  ): Promise<{ runId: string; chunks: Promise<Chunk[]> }>;
}
