/**
 * The child process of schema-parser.ts: reads a graph's JSON schemas from its TypeScript source with the official
 * server's own parser (`@langchain/langgraph-api/schema`, the TypeScript compiler and a JSON-schema generator), one
 * graph per message on its IPC channel. `mainThread: true` runs the parser here rather than in a worker thread of its
 * own. It exits when its parent disconnects.
 */
import { writeFileSync } from 'node:fs';
import { getStaticGraphSchema } from '@langchain/langgraph-api/schema';

// Over the deployment's memory bound the kernel kills one process of its group: this one first, not the server
// (raising one's own score needs no privilege; where /proc says no, the default stands).
try {
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {
  // not Linux, or no /proc
}

process.on('message', (job) => {
  void getStaticGraphSchema(job.spec, { mainThread: true }).then(
    (schemas) => process.send?.({ id: job.id, schemas }),
    (err) => process.send?.({ id: job.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
