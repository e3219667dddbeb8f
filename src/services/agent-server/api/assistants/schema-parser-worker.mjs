/**
 * The worker thread of schema-parser.ts: reads a graph's JSON schemas from its TypeScript source with the official
 * server's own parser (`@langchain/langgraph-api/schema`, the TypeScript compiler and a JSON-schema generator), one
 * graph per message. `mainThread: true` runs the parser here, in this thread, rather than in a worker of its own.
 */
import { parentPort } from 'node:worker_threads';
import { getStaticGraphSchema } from '@langchain/langgraph-api/schema';

parentPort?.on('message', (job) => {
  void getStaticGraphSchema(job.spec, { mainThread: true }).then(
    (schemas) => parentPort?.postMessage({ id: job.id, schemas }),
    (err) => parentPort?.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) }),
  );
});
