import { spawn, type ChildProcess } from 'node:child_process';

/**
 * An HTTP upstream in its own process, so a test can SIGKILL it (the kernel
 * closes its listener and every connection at once) and start it again on
 * the same port. It answers every request 200 JSON `{upstream, pid, url}`
 * once the request body has ended.
 */
export interface UpstreamProcess {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** SIGKILL by pid; resolves once the process has exited. Idempotent. */
  kill(): Promise<void>;
}

const SERVER = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const body = JSON.stringify({ upstream: process.env.UPSTREAM_NAME, pid: process.pid, url: req.url });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.env.UPSTREAM_PORT), '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

/** Starts the upstream on `port` (0 = any free one) and resolves once it listens. */
export async function spawnUpstream(name: string, port = 0, readyTimeoutMs = 10_000): Promise<UpstreamProcess> {
  const child = spawn(process.execPath, ['-e', SERVER], {
    env: { PATH: process.env.PATH ?? '', UPSTREAM_NAME: name, UPSTREAM_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => (live.delete(child), resolve())));
  let output = '';
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const bound = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`upstream ${name} did not listen within ${readyTimeoutMs} ms:\n${output}`)),
      readyTimeoutMs,
    );
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      const line = /^\{.*\}$/m.exec(text);
      if (line) (clearTimeout(timer), resolve((JSON.parse(line[0]) as { port: number }).port));
    });
    void exited.then(
      () => (clearTimeout(timer), reject(new Error(`upstream ${name} exited before listening:\n${output}`))),
    );
  }).catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  });
  let killing: Promise<void> | undefined;
  return {
    name,
    pid: child.pid!,
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    kill: () =>
      (killing ??=
        child.exitCode !== null || child.signalCode !== null
          ? Promise.resolve()
          : (process.kill(child.pid!, 'SIGKILL'), exited)),
  };
}
