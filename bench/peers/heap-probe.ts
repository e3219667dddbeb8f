/**
 * Preloaded (`--import`) into every Agent Server bench/agent-memory.ts starts, ours and the official one alike: on
 * SIGUSR2 it writes the process's memory (process.memoryUsage()) before and after a full garbage collection to
 * BENCH_HEAP_PROBE_FILE. After a quiet period, RSS alone cannot tell memory still held (retained runs, caches) from
 * garbage V8 has not collected yet, since nothing allocated; the heap after a full GC can. Nothing runs until the signal.
 */
import { writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const file = process.env.BENCH_HEAP_PROBE_FILE;
if (file) {
  // V8 exposes gc() to contexts made after the flag is set: a full, synchronous collection.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  process.on('SIGUSR2', () => {
    const before = process.memoryUsage();
    gc();
    writeFileSync(file, JSON.stringify({ before, after: process.memoryUsage() }));
  });
}
