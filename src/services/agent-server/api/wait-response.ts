/**
 * The answer of `…/runs/wait`, as the official servers send it: the status and headers at once (`Content-Location`
 * names the run while it runs: the SDK's `onRunCreated`, and the edge's `until: run` hold whatever the client does
 * next), a newline every `keepAliveMs` while the run goes on (so no proxy takes the quiet for a dead upstream), then the
 * JSON. Leading whitespace is valid JSON. A client that leaves only stops the newlines: what happens to the run is the
 * caller's (`on_disconnect`).
 */
export function waitResponse(
  result: Promise<unknown>,
  { headers, keepAliveMs }: { headers: Readonly<Record<string, string>>; keepAliveMs: number },
): Response {
  const encoder = new TextEncoder();
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(() => controller.enqueue(encoder.encode('\n')), keepAliveMs);
      timer.unref();
      result.then(
        (value) => {
          if (done) return;
          done = true;
          clearInterval(timer);
          controller.enqueue(encoder.encode(JSON.stringify(value)));
          controller.close();
        },
        (err: unknown) => {
          if (done) return;
          done = true;
          clearInterval(timer);
          controller.error(err);
        },
      );
    },
    cancel() {
      done = true;
      clearInterval(timer);
    },
  });
  return new Response(body, {
    status: 200,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });
}
