/**
 * Where a text stops being JSON, as `line L, column C`, and nothing else: V8's JSON.parse messages quote the input
 * (`Unexpected token 'D', "DATABASE_P"... is not valid JSON`), and the input may be any file of a repository or a
 * request body holding secrets. A message must never carry a parse error's text, only this.
 */
export function jsonErrorPosition(text: string): string {
  const at = failingOffset(text);
  const before = text.slice(0, at);
  const where = `line ${before.split('\n').length}, column ${at - before.lastIndexOf('\n')}`;
  return at === text.length ? `${where}: ends too soon` : where;
}

/** V8 names the offset in most messages ("... in JSON at position 7"); otherwise the shortest prefix that cannot start any JSON text ends there. */
function failingOffset(text: string): number {
  const stated = /at position (\d+)/.exec(parseError(text) ?? '');
  if (stated) return Math.min(Number(stated[1]), text.length);
  // A prefix is viable when it parses or only ends too soon; once a prefix is not viable no longer one is.
  const viable = (n: number) => {
    const m = parseError(text.slice(0, n));
    if (m === null || m.startsWith('Unexpected end of JSON input')) return true;
    const pos = /at position (\d+)/.exec(m);
    return pos !== null && Number(pos[1]) >= n;
  };
  if (viable(text.length)) return text.length;
  let lo = 0; // viable (the empty text only ends too soon)
  let hi = text.length; // not viable
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (viable(mid)) lo = mid;
    else hi = mid;
  }
  return hi - 1;
}

function parseError(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
