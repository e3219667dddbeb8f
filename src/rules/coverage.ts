import picomatch from 'picomatch';
import { templateMatcher } from './template.ts';
import type { Alternative, Method, PathCondition, Rule } from './types.ts';

/**
 * Static containment between rule matches, used by the linter: does every
 * request that fits `inner` also fit `outer`? Sound but incomplete: `true`
 * is always right; `false` may only mean "cannot tell" (for example a glob
 * against a prefix), so a lint built on it can miss a finding but never
 * invent one.
 */
export function matchCovers(outer: Rule, inner: Rule): boolean {
  return inner.alternatives.every((b) => outer.alternatives.some((a) => alternativeCovers(a, b)));
}

function alternativeCovers(a: Alternative, b: Alternative): boolean {
  return methodsCover(a.methods, b.methods) && pathCovers(a.path, b.path);
}

function methodsCover(a: readonly Method[] | null, b: readonly Method[] | null): boolean {
  if (a === null) return true;
  return b !== null && b.every((m) => a.includes(m));
}

function under(path: string, prefix: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(prefix + '/');
}

/** The literal segments of a template before its first placeholder: `/api/v1/runs/{uuid}` → `/api/v1/runs`. */
function literalHead(template: string): string {
  const i = template.indexOf('/{');
  return i === -1 ? template : template.slice(0, i);
}

function pathCovers(a: PathCondition | null, b: PathCondition | null): boolean {
  if (a === null) return true;
  if (a.kind === 'prefix' && a.value === '/') return true;
  if (b === null) return false;
  if (a.kind === b.kind && a.value === b.value) return true;
  switch (a.kind) {
    case 'path':
      return false;
    case 'prefix':
      if (b.kind === 'path' || b.kind === 'prefix') return under(b.value, a.value);
      // `/runs/{uuid}` only fits paths below `/runs`, so a prefix covering the head covers it.
      if (b.kind === 'template') return under(literalHead(b.value), a.value);
      return false;
    case 'contains':
      if (b.kind === 'path' || b.kind === 'prefix' || b.kind === 'contains') return b.value.includes(a.value);
      if (b.kind === 'template') return literalHead(b.value).includes(a.value);
      return false;
    case 'glob':
      return b.kind === 'path' && picomatch(a.value, { dot: true })(b.value);
    case 'template':
      return b.kind === 'path' && templateMatcher(a.value)(b.value);
  }
}
