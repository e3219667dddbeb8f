/**
 * A call to a running gateway's admin listener with the operator token, for `gateway keys` and `gateway limits`. A
 * gateway that cannot be reached is one line and exit 2; a refusal is its `detail`, with the exit code `exitFor` gives.
 */
export function adminCaller(
  base: string,
  token: string,
  fail: (message: string, code: 1 | 2) => Error,
  exitFor: (status: number) => 1 | 2,
): (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>> {
  return async (method, path, body) => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined && { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw fail(`cannot reach the gateway's admin listener at ${base} (${cause}): is it running? (--admin-url)`, 2);
    }
    const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (res.ok) return answer;
    const detail = typeof answer.detail === 'string' ? answer.detail : `HTTP ${res.status}`;
    throw fail(`${base}: ${detail}`, exitFor(res.status));
  };
}
