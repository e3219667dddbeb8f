/**
 * The child process of schema-parser.ts: reads a graph's JSON schemas from its TypeScript source with the official
 * server's own parser (`@langchain/langgraph-api/schema`, the TypeScript compiler and a JSON-schema generator), one
 * graph per message on its IPC channel. `mainThread: true` runs the parser here rather than in a worker thread of its
 * own. It exits when its parent disconnects.
 */
import { getStaticGraphSchema } from '@langchain/langgraph-api/schema';

process.on('message', (job) => {
  void getStaticGraphSchema(job.spec, { mainThread: true }).then(
    (schemas) => process.send?.({ id: job.id, schemas }),
    (err) => process.send?.({ id: job.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
