import { randomUUID } from 'node:crypto';
import {
  emptyCheckpoint,
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
} from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import { describe, expect, it } from 'vitest';
import { threadStorageReader } from '../../../../src/services/agent-server/store/checkpoint-storage.ts';

/**
 * What a thread occupies in one of the server's checkpointers (`GET /threads/{id}/storage`), the same for memory,
 * Redis and PostgreSQL: rows of every namespace of this thread only, a channel's value counted in each checkpoint that
 * holds it (every checkpoint here puts its channels at a new version, so PostgresSaver's one row per channel and
 * version counts the same), its bytes its JSON as the checkpointer stores it (`encoded`: as is in memory and
 * PostgreSQL, base64 in Redis).
 */
const META: CheckpointMetadata = { source: 'loop', step: 0, parents: {} };

/** A checkpoint whose every channel is at `version`: put with its versions as new, as LangGraph puts them. */
function checkpoint(values: Record<string, unknown>, version = 1): Checkpoint {
  const c = emptyCheckpoint();
  return {
    ...c,
    channel_values: values,
    channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, version])),
  };
}

/** Puts `c` with its channel versions as the new ones (PostgresSaver stores only the values of new versions). */
function put(saver: BaseCheckpointSaver, config: RunnableConfig, c: Checkpoint) {
  return saver.put(config, c, META, c.channel_versions);
}

export function threadStorageContract(
  name: string,
  make: () => BaseCheckpointSaver | Promise<BaseCheckpointSaver>,
  encoded: (jsonBytes: number) => number,
): void {
  describe(`thread storage: ${name}`, () => {
    it('counts every namespace of the thread, one channel row per checkpoint holding it, and its writes', async () => {
      const saver = await make();
      const measure = threadStorageReader(saver)!;
      const thread = randomUUID();
      expect(await measure(thread)).toMatchObject({ total_bytes: 0, checkpoints: { rows: 0, bytes: 0 } });

      const text = 'ä'.repeat(50); // 100 bytes in UTF-8
      const messages = [text];
      const root = await put(
        saver,
        { configurable: { thread_id: thread, checkpoint_ns: '' } },
        checkpoint({ messages, step: 1 }),
      );
      await put(saver, { configurable: { thread_id: thread, checkpoint_ns: 'child:1' } }, checkpoint({ messages }));
      await saver.putWrites(root, [['messages', [text]]], 'task-1');
      await saver.putWrites(root, [['step', 2]], 'task-2');

      const first = await measure(thread);
      expect(first.checkpoints.rows).toBe(2);
      expect(first.channel_values.by_channel).toEqual({
        messages: { rows: 2, bytes: 2 * encoded(Buffer.byteLength(JSON.stringify(messages))) },
        step: { rows: 1, bytes: encoded(1) },
      });
      expect(first.channel_values).toMatchObject({ rows: 3, bytes: 2 * encoded(104) + encoded(1) });
      expect(first.pending_writes.rows).toBe(2);
      expect(first.pending_writes.bytes).toBeGreaterThan(100); // the first write holds the text
      expect(first.checkpoints.bytes).toBeGreaterThan(0);
      expect(first.total_bytes).toBe(first.checkpoints.bytes + first.channel_values.bytes + first.pending_writes.bytes);

      await put(saver, root, checkpoint({ messages: [...messages, text], step: 2 }, 2));
      const second = await measure(thread);
      expect(second.checkpoints.rows).toBe(3);
      expect(second.channel_values.by_channel.messages!.rows).toBe(3);
      expect(second.total_bytes).toBeGreaterThan(first.total_bytes);
    });

    it("leaves out other threads, one whose id starts with this one's too, and forgets a deleted thread", async () => {
      const saver = await make();
      const measure = threadStorageReader(saver)!;
      const thread = randomUUID();
      for (const id of [thread, `${thread}0`]) {
        const written = await put(
          saver,
          { configurable: { thread_id: id, checkpoint_ns: '' } },
          checkpoint({ messages: ['x'] }),
        );
        await saver.putWrites(written, [['messages', ['y']]], 'task');
      }
      const alone = await measure(thread);
      expect(alone).toMatchObject({ thread_id: thread, checkpoints: { rows: 1 }, pending_writes: { rows: 1 } });
      expect(await measure(`${thread}0`)).toMatchObject({ checkpoints: { rows: 1 }, pending_writes: { rows: 1 } });
      await saver.deleteThread(thread);
      expect(await measure(thread)).toMatchObject({ total_bytes: 0, pending_writes: { rows: 0 } });
      // Rows hold no thread id, and the two threads' rows are alike: the other thread's storage is unchanged.
      expect((await measure(`${thread}0`)).total_bytes).toBe(alone.total_bytes);
    });
  });
}
