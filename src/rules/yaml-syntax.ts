import { Parser, type LineCounter, type YAMLError } from 'yaml';

/**
 * A YAML syntax error told where the mistake is as well as where the parser noticed it. A `{` or `[` left open, or a
 * quote never closed, is noticed lines later (where the next construct cannot fit): the line that opened it is the
 * one to look at. The parser's concrete syntax tree still holds the construct, without its closing token.
 */

/** What a syntax error says, and the line it is reported at (the opening line when one is known). */
export interface YamlSyntaxProblem {
  readonly line: number;
  readonly reason: string;
}

interface Unclosed {
  readonly what: string;
  readonly offset: number;
}

const FLOW_NAMES: Readonly<Record<string, string>> = { '{': 'mapping', '[': 'list' };

export function describeYamlError(text: string, error: YAMLError, lines: LineCounter): YamlSyntaxProblem {
  const noticed = lines.linePos(error.pos[0]).line;
  const message = firstLine(error.message);
  const open = lastUnclosedBefore(text, error.pos[0]);
  if (open === null) return { line: noticed, reason: `YAML syntax error: ${message}` };
  const opened = lines.linePos(open.offset).line;
  const atEnd = error.pos[0] >= text.trimEnd().length;
  const where =
    opened === noticed || atEnd
      ? `the ${open.what} opened at line ${opened} is never closed`
      : `the ${open.what} opened at line ${opened} is not closed by line ${noticed}`;
  return { line: opened, reason: `YAML syntax error: ${where} (${message})` };
}

/** The construct opened last before `offset` that has no closing token, or null. */
function lastUnclosedBefore(text: string, offset: number): Unclosed | null {
  let found: Unclosed | null = null;
  const consider = (u: Unclosed) => {
    if (u.offset <= offset && (found === null || u.offset > found.offset)) found = u;
  };
  const seen = new Set<object>();
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    const token = node as { type?: unknown; offset?: unknown; source?: unknown; start?: unknown; end?: unknown };
    if (token.type === 'flow-collection') {
      const start = token.start as { source?: string; offset?: number } | undefined;
      const closer = start?.source === '{' ? '}' : ']';
      const closed = Array.isArray(token.end) && token.end.some((t) => (t as { source?: unknown }).source === closer);
      if (!closed && start?.offset !== undefined)
        consider({ what: FLOW_NAMES[start.source ?? '['] ?? 'list', offset: start.offset });
    } else if (token.type === 'double-quoted-scalar' || token.type === 'single-quoted-scalar') {
      const source = typeof token.source === 'string' ? token.source : '';
      const quote = source[0] ?? '';
      if (typeof token.offset === 'number' && !closesQuote(source, quote))
        consider({ what: quote === '"' ? 'double-quoted string' : 'single-quoted string', offset: token.offset });
    }
    for (const value of Object.values(node)) walk(value);
  };
  for (const token of new Parser().parse(text)) walk(token);
  return found;
}

/** Whether a quoted scalar's source ends with its closing quote (not an escaped one). */
function closesQuote(source: string, quote: string): boolean {
  if (source.length < 2 || !source.endsWith(quote)) return false;
  if (quote === "'") return true; // '' inside is a quote, and a run of them ends the scalar either way
  let backslashes = 0;
  for (let i = source.length - 2; i > 0 && source[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 0;
}

function firstLine(message: string): string {
  return message
    .split('\n')[0]!
    .replace(/ at line \d+, column \d+:?$/, '')
    .trim();
}
