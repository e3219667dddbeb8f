/**
 * A pod's key checks: `POST <REVISION_KEY_CHECK_URL>` `{key}` with the revision's bearer token, answered
 * `{accepted}` by the gateway (api/internal-routes.ts), which holds the key registry; the pod holds no credential of
 * it. An accepted key is of the revision's organisation (`org`); the answers are remembered briefly by the caller
 * (key-answers.ts). A question the gateway does not answer within `timeoutMs`, or answers otherwise than 200,
 * rejects: the request is refused and nothing is remembered.
 */
export function askGateway(
  url: string,
  token: string,
  org: string | null,
  timeoutMs = 5000,
): (key: string) => Promise<string | null> {
  return async (key) => {
    if (org === null) return null; // no organisation: no key is accepted (no question either)
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ key }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`key check answered HTTP ${res.status}`);
    }
    const answer = (await res.json()) as { accepted?: unknown };
    return answer.accepted === true ? org : null;
  };
}
