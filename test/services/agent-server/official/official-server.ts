import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The official JS Agent Server (`@langchain/langgraph-api`) serving an app, in a child process of its own
 * (official-server-entry.ts), so a fidelity test compares this server's answers with the official one's live rather
 * than with answers written down. Its state goes to a temporary folder, removed by `close`, which kills it by pid.
 */
export interface OfficialServer {
  readonly url: string;
  close(): Promise<void>;
}

const ENTRY = fileURLToPath(new URL('./official-server-entry.ts', import.meta.url));
const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

export async function startOfficialServer(
  configPath: string,
  env: Record<string, string> = {},
  readyTimeoutMs = 120_000,
): Promise<OfficialServer> {
  const stateDir = await mkdtemp(join(tmpdir(), 'official-agent-server-'));
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, configPath, stateDir], {
    env: { ...process.env, ...env, NO_COLOR: '1', LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (live.delete(child), resolve())));
  let output = '';
  child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(child.pid!, 'SIGKILL');
      await exited;
    }
    await rm(stateDir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the official server did not listen within ${readyTimeoutMs} ms:\n${output}`)),
        readyTimeoutMs,
      );
      let text = '';
      child.stdout.on('data', (d: Buffer) => {
        text += d.toString();
        const line = /^\{"url":.*\}$/m.exec(text);
        if (line) (clearTimeout(timer), resolve((JSON.parse(line[0]) as { url: string }).url));
        text = text.slice(-4000);
      });
      void exited.then(() => (clearTimeout(timer), reject(new Error(`the official server exited:\n${output}`))));
    });
    return { url, close };
  } catch (err) {
    await close();
    throw err;
  }
}
