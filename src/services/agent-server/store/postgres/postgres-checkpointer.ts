import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type pg from 'pg';
import { StorageTally, type ThreadStorage } from '../storage-tally.ts';

/**
 * LangGraph's PostgresSaver (the checkpointer of the official server's stack), which also tells what a thread
 * occupies in its three tables (`GET /threads/{id}/storage`): each checkpoint row (the checkpoint without its values,
 * its metadata and ids), each stored channel value (a row per channel and version, `checkpoint_blobs`; a version
 * shared by several checkpoints is one row, counted once) and each pending write, as their text or bytes; not
 * PostgreSQL's own overhead (row headers, TOAST, indexes). One round trip.
 */
export class AgentPostgresSaver extends PostgresSaver {
  constructor(
    private readonly db: pg.Pool,
    schema: string,
  ) {
    super(db, undefined, { schema });
  }

  async storageOf(threadId: string): Promise<ThreadStorage> {
    const { rows } = await this.db.query<{ section: string; channel: string | null; n: string; bytes: string | null }>(
      `SELECT 'checkpoints' AS section, NULL AS channel, count(*) AS n,
              sum(octet_length(checkpoint::text) + octet_length(metadata::text) + octet_length(checkpoint_id)
                  + coalesce(octet_length(parent_checkpoint_id), 0)) AS bytes
         FROM checkpoints WHERE thread_id = $1
       UNION ALL
       SELECT 'channel', channel, count(*), sum(octet_length(blob))
         FROM checkpoint_blobs WHERE thread_id = $1 AND blob IS NOT NULL GROUP BY channel
       UNION ALL
       SELECT 'writes', NULL, count(*), sum(octet_length(blob) + octet_length(task_id) + octet_length(channel))
         FROM checkpoint_writes WHERE thread_id = $1`,
      [threadId],
    );
    const tally = new StorageTally(threadId);
    for (const { section, channel, n, bytes } of rows) {
      const [count, size] = [Number(n), Number(bytes ?? 0)];
      if (section === 'checkpoints') tally.checkpointRows(count, size);
      else if (section === 'writes') tally.writeRows(count, size);
      else tally.channelRows(channel!, count, size);
    }
    return tally.result();
  }
}
