import type { KubernetesObject, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/**
 * Keeps an up-to-date view of the objects of one kind a selector picks: list (a resourceVersion), then watch from it;
 * a 410 Gone (the version is too old) relists, any other error or end reconnects after a backoff (doubling to 10 s),
 * an abort stops it. `onChange` gets the whole view after each list and each event.
 */
export interface WatchTarget {
  readonly apiVersion: string;
  readonly kind: string;
  /** The list path, e.g. `/apis/apps/v1/namespaces/ns/deployments`. */
  readonly path: string;
  readonly namespace: string;
  readonly labelSelector: string;
}

export function watchLoop(
  o: { readonly objects: KubernetesObjectApi; readonly watch: Watch; readonly log: Logger },
  target: WatchTarget,
  onChange: (view: ReadonlyMap<string, KubernetesObject>) => void,
  signal: AbortSignal,
): void {
  const view = new Map<string, KubernetesObject>();
  let backoffMs = 250;
  const run = async (): Promise<void> => {
    while (!signal.aborted) {
      try {
        const list = await o.objects.list(
          target.apiVersion,
          target.kind,
          target.namespace,
          undefined,
          undefined,
          undefined,
          undefined,
          target.labelSelector,
        );
        view.clear();
        for (const item of list.items) view.set(item.metadata?.name ?? '', item);
        onChange(view);
        // Watch from the list's version; a watch the server ends resumes from the last event's version.
        const at = { rv: list.metadata?.resourceVersion ?? '' };
        while (!signal.aborted && !(await watchOnce(o.watch, target, at, view, onChange, signal))) {
          backoffMs = 250;
          await sleep(100, signal); // A server that ends watches at once is not asked in a tight loop.
        }
        if (!signal.aborted) o.log.debug({ kind: target.kind }, 'watch expired (410 Gone): relisting');
      } catch (err) {
        if (signal.aborted) return;
        o.log.warn({ kind: target.kind, err: (err as Error).message }, 'watch failed: reconnecting');
        await sleep(backoffMs, signal);
        backoffMs = Math.min(backoffMs * 2, 10_000);
      }
    }
  };
  void run();
}

/** Resolves true on 410 Gone, false when the server ended the watch; rejects on other errors. */
async function watchOnce(
  watch: Watch,
  target: WatchTarget,
  at: { rv: string },
  view: Map<string, KubernetesObject>,
  onChange: (view: ReadonlyMap<string, KubernetesObject>) => void,
  signal: AbortSignal,
): Promise<boolean> {
  let gone = false;
  const ended = new Promise<void>((resolve, reject) => {
    const stop = (err: unknown) => (err && !isGone(err) && !signal.aborted ? reject(asError(err)) : resolve());
    const params = { labelSelector: target.labelSelector, resourceVersion: at.rv, allowWatchBookmarks: true };
    watch
      .watch(
        target.path,
        params,
        (type: string, obj: KubernetesObject & { code?: number }) => {
          if (type === 'ERROR') {
            if (obj.code === 410) gone = true;
            return;
          }
          const rv = obj.metadata?.resourceVersion;
          if (rv) at.rv = rv;
          if (type === 'BOOKMARK') return;
          const name = obj.metadata?.name ?? '';
          if (type === 'DELETED') view.delete(name);
          else view.set(name, obj);
          onChange(view);
        },
        (err: unknown) => {
          if (isGone(err)) gone = true;
          stop(err);
        },
      )
      .then((controller) => {
        if (signal.aborted) controller.abort();
        else signal.addEventListener('abort', () => controller.abort(), { once: true });
      }, reject);
  });
  await ended;
  return gone;
}

function isGone(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: number; message?: string } | null;
  return e?.statusCode === 410 || e?.code === 410 || /\b410\b/.test(e?.message ?? '');
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}
