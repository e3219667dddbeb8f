import type { z } from 'zod';

/** Schema issues of a rule file (zod's) as the reasons `parseRuleFile` reports, by line. */

/**
 * A schema issue in words. `whole`: what an issue at the root of the validated value is called (`the file`,
 * `"rules"`, `"guards"`).
 */
export function describeIssue(issue: z.core.$ZodIssue, whole = 'the file'): string {
  const field = fieldName(issue.path);
  const got = (input: unknown) =>
    Array.isArray(input)
      ? input.length === 0
        ? 'an empty list'
        : 'a list'
      : input === null
        ? 'null'
        : typeof input === 'object'
          ? 'a mapping'
          : JSON.stringify(input);
  switch (issue.code) {
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}${field ? ` in ${field}` : ''}`;
    case 'invalid_type':
      if (issue.input === undefined) return `missing "${field}"`;
      return `${field || whole} must be ${article(issue.expected)}, got ${got(issue.input)}`;
    case 'invalid_value':
      return `${field} must be one of ${issue.values.join(', ')}, got ${got(issue.input)}`;
    case 'invalid_union':
      return `${field} must be a method or a list of methods (${'GET, POST, ...'}), got ${got(issue.input)}`;
    case 'too_small':
    case 'too_big': {
      if (issue.origin === 'array' && issue.path.length <= 1) return issue.message;
      const gotten = 'input' in issue ? `, got ${got(issue.input)}` : '';
      if (issue.origin === 'number') {
        const bound = issue.code === 'too_small' ? `at least ${issue.minimum}` : `at most ${issue.maximum}`;
        return `${field} must be ${bound}${gotten}`;
      }
      return `${field}: ${issue.message.replace(/^Too (small|big): expected (\w+) to have /, 'must be ')}${gotten}`;
    }
    default:
      return field ? `${field}: ${issue.message}` : issue.message;
  }
}

function article(expected: string): string {
  if (expected === 'array') return 'a list';
  if (expected === 'object') return 'a mapping';
  if (expected === 'int' || expected === 'integer') return 'a whole number';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

/** `limits[0].per` from `[3, 'limits', 0, 'per']` (the leading rule index is left to `withRule`). */
function fieldName(path: readonly PropertyKey[]): string {
  let out = '';
  for (const [i, p] of path.entries()) {
    if (i === 0 && typeof p === 'number') continue;
    out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  }
  return out;
}

/** `reason` prefixed with the item it is about (`rule "id"`, or `guard #2` when the item has no id), from a list. */
export function withItem(items: unknown, path: readonly PropertyKey[], reason: string, noun = 'rule'): string {
  const i = path[0];
  if (typeof i !== 'number' || !Array.isArray(items)) return reason;
  const id = (items[i] as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? `${noun} "${id}": ${reason}` : `${noun} #${i + 1}: ${reason}`;
}
