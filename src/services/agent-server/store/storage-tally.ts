/** Rows and the bytes they occupy. */
export interface SectionSize {
  rows: number;
  bytes: number;
}

/**
 * What a thread's checkpoints occupy in the server's checkpointer, as stored (`GET /threads/{id}/storage`), every
 * namespace (subgraphs) included. `total_bytes` is the sum of the three sections.
 */
export interface ThreadStorage {
  readonly thread_id: string;
  readonly total_bytes: number;
  readonly checkpoints: SectionSize;
  readonly channel_values: SectionSize & { readonly by_channel: Record<string, SectionSize> };
  readonly pending_writes: SectionSize;
}

/**
 * Adds up stored rows. PostgresSaver keeps a checkpoint's channel values in rows of their own (one per channel and
 * version, shared by the checkpoints that hold that version): they are added as they are (`rows`). MemorySaver and
 * RedisCheckpointer keep them inside the checkpoint's row: a checkpoint row is split into its channel values (one row per
 * channel the checkpoint holds, its value's serialized bytes) and the rest (`checkpoints`), so the sections add up to
 * what is stored. The serializer writes JSON with `JSON.stringify`, which `JSON.parse` then `JSON.stringify` gives back
 * unchanged, so a value's bytes are exactly its slice of the row.
 */
export class StorageTally {
  private readonly checkpoints: SectionSize = { rows: 0, bytes: 0 };
  private readonly writes: SectionSize = { rows: 0, bytes: 0 };
  private readonly channels = new Map<string, SectionSize>();

  constructor(private readonly threadId: string) {}

  /**
   * One checkpoint row of `rowBytes`, whose serialized checkpoint (JSON text, or null when it is not JSON) lies in
   * the row `scale` times its size (4/3 when it is stored base64-encoded).
   */
  checkpoint(rowBytes: number, checkpointJson: string | null, scale = 1): void {
    let channelBytes = 0;
    for (const [channel, bytes] of channelSlices(checkpointJson)) {
      const share = Math.round(bytes * scale);
      const section = this.channels.get(channel) ?? { rows: 0, bytes: 0 };
      section.rows += 1;
      section.bytes += share;
      this.channels.set(channel, section);
      channelBytes += share;
    }
    this.checkpoints.rows += 1;
    this.checkpoints.bytes += rowBytes - channelBytes;
  }

  /** `count` rows of `channel`'s values, stored apart from the checkpoints, of `bytes` in all. */
  channelRows(channel: string, count: number, bytes: number): void {
    const section = this.channels.get(channel) ?? { rows: 0, bytes: 0 };
    section.rows += count;
    section.bytes += bytes;
    this.channels.set(channel, section);
  }

  /** `count` checkpoint rows (their channel values stored apart) of `bytes` in all. */
  checkpointRows(count: number, bytes: number): void {
    this.checkpoints.rows += count;
    this.checkpoints.bytes += bytes;
  }

  /** `count` pending writes of `bytes` in all. */
  writeRows(count: number, bytes: number): void {
    this.writes.rows += count;
    this.writes.bytes += bytes;
  }

  write(rowBytes: number): void {
    this.writes.rows += 1;
    this.writes.bytes += rowBytes;
  }

  result(): ThreadStorage {
    const byChannel = [...this.channels].sort(([a], [b]) => (a < b ? -1 : 1));
    const channelValues = {
      rows: byChannel.reduce((n, [, s]) => n + s.rows, 0),
      bytes: byChannel.reduce((n, [, s]) => n + s.bytes, 0),
      by_channel: Object.fromEntries(byChannel),
    };
    return {
      thread_id: this.threadId,
      total_bytes: this.checkpoints.bytes + channelValues.bytes + this.writes.bytes,
      checkpoints: this.checkpoints,
      channel_values: channelValues,
      pending_writes: this.writes,
    };
  }
}

/** Each channel value of a serialized checkpoint with its size in bytes (none if the text is not a JSON checkpoint). */
function channelSlices(checkpointJson: string | null): [string, number][] {
  if (checkpointJson === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(checkpointJson);
  } catch {
    return [];
  }
  const values = (parsed as { channel_values?: unknown } | null)?.channel_values;
  if (values === null || typeof values !== 'object' || Array.isArray(values)) return [];
  return Object.entries(values).map(([channel, value]) => [channel, utf8(JSON.stringify(value) ?? '')]);
}

export const utf8 = (text: string): number => Buffer.byteLength(text, 'utf8');
