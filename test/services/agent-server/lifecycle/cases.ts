import { afterAll, beforeAll, describe } from 'vitest';
import { collect, newKey, sdk, startStack, userInput, type Stack } from '../helpers.ts';
import { assistantCases } from './assistant-cases.ts';
import { runCancelJoinCases } from './run-cancel-join-cases.ts';
import { runJoinStreamCases } from './run-join-stream-cases.ts';
import { runRemovalCases } from './run-removal-cases.ts';
import { waitFor, type Chunk, type LifecycleBackend, type LifecycleContext } from './context.ts';
import { threadCases } from './thread-cases.ts';

/**
 * Updating and deleting assistants and threads, and controlling runs
 * (cancel, join, join stream, delete), with the public JS client through
 * the edge, against one backend (the case files say what each covers).
 */
export function lifecycleCases(name: string, make: () => Promise<LifecycleBackend>): void {
  describe(`${name}: update, delete and run control through the SDK`, () => {
    let stack: Stack;
    let backend: LifecycleBackend;
    beforeAll(async () => {
      backend = await make();
      stack = await startStack({ store: backend.store, checkpointer: backend.checkpointer });
    });
    afterAll(() => stack?.close());

    const client = () => sdk(stack.url, newKey()).client;
    /** A run of the `slow` graph that waits until cancelled (or `waitMs`), streamed in the background. */
    const slowRun = async (
      c: ReturnType<typeof client>,
      threadId: string,
      options: { waitMs?: number; strategy?: 'enqueue' } = {},
    ) => {
      let runId = '';
      const chunks = collect(
        c.runs.stream(threadId, 'slow', {
          input: userInput('x'),
          config: { configurable: { wait_ms: options.waitMs ?? 30_000 } },
          multitaskStrategy: options.strategy,
          onRunCreated: (m) => (runId = m.run_id),
        }),
      ) as Promise<Chunk[]>;
      await waitFor(() => runId !== '');
      return { runId, chunks };
    };

    const t: LifecycleContext = {
      get stack() {
        return stack;
      },
      get backend() {
        return backend;
      },
      client,
      slowRun,
    };
    assistantCases(t);
    threadCases(t);
    describe('runs', () => {
      runCancelJoinCases(t);
      runJoinStreamCases(t);
      runRemovalCases(t);
    });
  });
}
