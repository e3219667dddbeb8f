import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { startServer } from '@langchain/langgraph-api/server';

/**
 * The official JS Agent Server (`@langchain/langgraph-api`, in-memory storage) serving an app config's graphs, run in
 * a child process by official-server.ts as the oracle of fidelity tests. argv: the app's `langgraph.json`, and a
 * folder of its own for the state it persists (`.langgraph_api/`). Prints `{"url": ...}` once it listens.
 */
const [configPath, stateDir] = process.argv.slice(2) as [string, string];
const { graphs } = JSON.parse(readFileSync(configPath, 'utf8')) as { graphs: Record<string, string> };
// Absolute graph paths, so the state folder can be another than the app's.
const absolute = Object.fromEntries(
  Object.entries(graphs).map(([id, spec]) => [id, resolve(dirname(configPath), spec)]),
);
const { host } = await startServer({ port: 0, nWorkers: 1, host: '127.0.0.1', cwd: stateDir, graphs: absolute });
console.log(JSON.stringify({ url: `http://${host}` }));
