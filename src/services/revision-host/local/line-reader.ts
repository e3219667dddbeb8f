import type { Readable } from 'node:stream';

/**
 * Newline-delimited text from a stream, each line at most `maxBytes`: a longer
 * one is cut there (`truncated`) and the rest of it skipped, so a writer that
 * never ends its line cannot grow the reader's memory.
 */
export function readLines(
  stream: Readable,
  maxBytes: number,
  onLine: (line: string, truncated: boolean) => void,
): void {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      if (skipping) skipping = false;
      else add(chunk.subarray(start, nl), true);
      start = nl + 1;
    }
    if (start < chunk.length && !skipping) add(chunk.subarray(start), false);
  });
  const add = (piece: Buffer, ends: boolean) => {
    const room = maxBytes - size;
    if (piece.length > room) {
      parts.push(piece.subarray(0, room));
      emit(true);
      skipping = !ends;
      return;
    }
    parts.push(piece);
    size += piece.length;
    if (ends) emit(false);
  };
  const emit = (truncated: boolean) => {
    const line = Buffer.concat(parts).toString('utf8');
    parts = [];
    size = 0;
    onLine(line, truncated);
  };
}
