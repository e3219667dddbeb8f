/**
 * One measured scenario: the load generator (load.ts) in its own process,
 * pinned to its core, against one target; the CPU time of the process under
 * test, of the upstream and of Redis, and the busy time of the tested core,
 * sampled over exactly the measured part (the load generator says when it
 * starts and ends).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { LoadResult, LoadSpec } from './load.ts';
import { coreSeconds, cpuSeconds, nodeCommand, treeCpuSeconds } from './processes.ts';

export interface Measured extends LoadResult {
  /** CPU share of the process under test (with its workers, for the workers targets), percent of one core. */
  readonly proxy_cpu_percent: number | null;
  /** What everything else ran on the tested core (its busy time minus the process under test). */
  readonly proxy_core_others_percent: number | null;
  /** Part of that: interrupt time on the core (mostly loopback networking). */
  readonly proxy_core_irq_percent: number | null;
  /** Time the hypervisor gave that core to someone else. */
  readonly proxy_core_steal_percent: number | null;
  readonly upstream_cpu_percent: number | null;
  readonly redis_cpu_percent: number | null;
  /** The measured window on the monotonic clock, µs (the clock of V8 CPU profiles). */
  readonly window_us: readonly [number, number];
}

export interface MeasureOptions {
  readonly spec: LoadSpec;
  readonly pids: { readonly proxy: number; readonly upstream: number | null; readonly redis: number | null };
  /** Count the CPU time of the process under test's children too (an edge with WORKERS > 1). */
  readonly proxyTree?: boolean;
  /** The core of the process under test (for its busy time), and the load generator's; null = not pinned. */
  readonly proxyCpu: number | null;
  readonly loadCpu: number | string | null;
}

const sample = (pids: readonly (number | null)[], core: number | null, tree: boolean) => ({
  at: performance.now(),
  us: Number(process.hrtime.bigint() / 1000n),
  cpu: pids.map((p, i) => (p === null ? null : i === 0 && tree ? treeCpuSeconds(p) : cpuSeconds(p))),
  core: core === null ? null : coreSeconds(core),
});

const share = (a: number | null | undefined, b: number | null | undefined, ms: number) =>
  a == null || b == null ? null : Math.round(((b - a) / (ms / 1000)) * 1000) / 10;

export function measure({ spec, pids, proxyTree = false, proxyCpu, loadCpu }: MeasureOptions): Promise<Measured> {
  const list = [pids.proxy, pids.upstream, pids.redis];
  const [cmd, args] = nodeCommand(['--import', 'tsx', 'bench/peers/load.ts', JSON.stringify(spec)], loadCpu);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });

  return new Promise((resolve, reject) => {
    let before = sample(list, proxyCpu, proxyTree);
    const timer = setTimeout(() => child.kill('SIGKILL'), (spec.warmupSeconds + spec.seconds) * 1000 + 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as { event: string } & LoadResult;
      if (msg.event === 'start') before = sample(list, proxyCpu, proxyTree);
      if (msg.event !== 'done') return;
      const after = sample(list, proxyCpu, proxyTree);
      const ms = after.at - before.at;
      const { event: _, ...result } = msg;
      const proxy = share(before.cpu[0], after.cpu[0], ms);
      const core = share(before.core?.busy, after.core?.busy, ms);
      resolve({
        ...result,
        proxy_cpu_percent: proxy,
        proxy_core_others_percent:
          core === null || proxy === null ? null : Math.max(0, Math.round((core - proxy) * 10) / 10),
        proxy_core_irq_percent: share(before.core?.irq, after.core?.irq, ms),
        proxy_core_steal_percent: share(before.core?.steal, after.core?.steal, ms),
        upstream_cpu_percent: share(before.cpu[1], after.cpu[1], ms),
        redis_cpu_percent: share(before.cpu[2], after.cpu[2], ms),
        window_us: [before.us, after.us],
      });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`load generator exited (${signal ?? code}) without a result`));
    });
  });
}
