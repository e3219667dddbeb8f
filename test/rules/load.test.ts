import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REGIONS } from '../../src/region.ts';
import { loadRuleFile, regionRuleFile } from '../../src/rules/load.ts';
import { parseRuleFile, RuleFileError } from '../../src/rules/parse.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const rulesDir = fileURLToPath(new URL('../../rules/', import.meta.url));

/** Parses `text` (named `file`) expecting a RuleFileError, and returns it. */
function parseError(text: string, file: string): RuleFileError {
  try {
    parseRuleFile(text, file);
  } catch (err) {
    expect(err).toBeInstanceOf(RuleFileError);
    return err as RuleFileError;
  }
  throw new Error(`${file} parsed, but it should be rejected`);
}

/** Loads `file` expecting a RuleFileError, and returns it. */
function loadError(file: string): RuleFileError {
  try {
    loadRuleFile(file);
  } catch (err) {
    expect(err).toBeInstanceOf(RuleFileError);
    return err as RuleFileError;
  }
  throw new Error(`${file} loaded, but it should be rejected`);
}

// One bad file per loader error (test/fixtures/<name>.yaml). `line` is where
// the mistake is written; each file starts with a valid rule so that the line
// is not trivially 1.
const BAD_FILES: readonly { fixture: string; line: number; reason: RegExp }[] = [
  { fixture: 'unknown-key', line: 7, reason: /^rule "typo": unknown key "foo"$/ },
  { fixture: 'duplicate-id', line: 7, reason: /^rule "same": duplicate id \(first defined on line 2\)$/ },
  { fixture: 'unknown-by', line: 8, reason: /limits\[0\]\.by must be one of api-key, user-ip, ip, got "session"/ },
  { fixture: 'bad-duration', line: 10, reason: /limits\[0\]\.per: bad duration/ },
  { fixture: 'bad-count', line: 9, reason: /limits\[0\]\.count must be at least 1, got 0$/ },
  { fixture: 'bad-count-negative', line: 9, reason: /limits\[0\]\.count must be at least 1, got -5$/ },
  { fixture: 'bad-count-fraction', line: 9, reason: /limits\[0\]\.count must be a whole number, got 1\.5$/ },
  { fixture: 'empty', line: 1, reason: /the file is empty/ },
  { fixture: 'path-not-string', line: 7, reason: /match\.path must be a string, got a list/ },
  { fixture: 'two-path-conditions', line: 8, reason: /two path conditions in one match \(path and prefix\)/ },
  { fixture: 'bad-glob', line: 7, reason: /bad glob "\/runs\/\[abc"/ },
  { fixture: 'bad-template', line: 7, reason: /bad template "\/runs\/\{foo\}": unknown placeholder \{foo\}/ },
  { fixture: 'yaml-syntax', line: 7, reason: /^YAML syntax error: / },
  // A `{` or a quote left open: the line that opened it, and the line where the parser noticed.
  {
    fixture: 'yaml-unclosed-map',
    line: 7,
    reason: /^YAML syntax error: the mapping opened at line 7 is not closed by line 10 \(Flow map in block collection/,
  },
  {
    fixture: 'yaml-unclosed-quote',
    line: 3,
    reason: /^YAML syntax error: the double-quoted string opened at line 3 is never closed \(Missing closing "quote\)$/,
  },
  { fixture: 'duplicate-key', line: 8, reason: /^YAML syntax error: Map keys must be unique/ },
  { fixture: 'no-limits', line: 7, reason: /a rule needs at least one limit, got an empty list/ },
  { fixture: 'missing-limits', line: 5, reason: /^rule "bad": missing "limits"$/ },
  { fixture: 'duplicate-by', line: 9, reason: /two limits count by "api-key"/ },
  {
    fixture: 'not-a-list',
    line: 4,
    reason:
      /^the file must be a list of rules, or a mapping of "rules" \(and "guards"\), got a mapping without either$/,
  },
  // Guards (a mapping of `guards:` and `rules:`).
  { fixture: 'guard-unknown-rule', line: 6, reason: /^guard "gen": rules\[1\] names no rule of this file: "generat"$/ },
  {
    fixture: 'guard-duplicate-id',
    line: 7,
    reason: /^guard "per-ip": duplicate guard id \(first defined on line 5\)$/,
  },
  { fixture: 'guard-bad-count', line: 5, reason: /^guard "per-ip": count must be at least 1, got 0$/ },
  { fixture: 'guard-unknown-key', line: 7, reason: /^guard "per-ip": unknown key "prefix"$/ },
  // In-flight limits ({by, concurrent, until}).
  {
    fixture: 'inflight-with-count',
    line: 9,
    reason: /^rule "runs": limits\[0\]: "count" with "concurrent": .*not both$/,
  },
  { fixture: 'inflight-bad-until', line: 9, reason: /limits\[0\]\.until must be one of response, run, got "forever"$/ },
  { fixture: 'until-without-concurrent', line: 10, reason: /"until" belongs to an in-flight limit/ },
  {
    fixture: 'guard-inflight-bad-match',
    line: 7,
    reason: /^guard "runs-in-flight": two path conditions in one match \(path and prefix\)/,
  },
  {
    fixture: 'guard-top-level-key',
    line: 6,
    reason: /^unknown key "limits" at the top of the file \(known: guards, rules\)$/,
  },
  { fixture: 'guard-missing-rules', line: 3, reason: /^missing "rules": a file with guards still needs its rules$/ },
  { fixture: 'guard-rules-not-a-list', line: 6, reason: /^"rules" must be a list, got a mapping$/ },
  { fixture: 'guard-reserved-rule-id', line: 7, reason: /^rule "guard": the id "guard" is reserved/ },
  { fixture: 'bad-method', line: 7, reason: /match\.method must be a method or a list of methods .*got "FETCH"/ },
  {
    fixture: 'unnormalised-path',
    line: 7,
    reason: /path "\/runs\/\/query" is not a normalised path \(requests are matched as "\/runs\/query"\)/,
  },
];

describe('loadRuleFile rejects a bad file, naming file and line', () => {
  it.each(BAD_FILES)('$fixture.yaml → line $line: $reason', ({ fixture: name, line, reason }) => {
    const file = fixture(`${name}.yaml`);
    const err = loadError(file);
    expect(err.code).toBe('invalid_rules');
    expect(err.problems).toHaveLength(1);
    const [problem] = err.problems;
    expect(problem).toMatchObject({ file, line });
    expect(problem!.reason).toMatch(reason);
  });

  it('renders every problem as `file:line: reason` in the message', () => {
    const file = fixture('duplicate-id.yaml');
    const err = loadError(file);
    expect(err.message).toBe(`${file}:7: rule "same": duplicate id (first defined on line 2)`);
  });

  it('reports every problem of a file in one error, one message line each', () => {
    const text = [
      '- id: a',
      '  match:',
      '    template: /runs/{foo}',
      '  limits:',
      '    - { by: ip, count: 1, per: 10s, category: C }',
      '- id: a',
      '  match: { path: /x/ }',
      '  limits:',
      '    - { by: ip, count: 1, per: 10s, category: C }',
    ].join('\n');
    const err = parseError(text, 'inline.yaml');
    expect(err.problems.map((p) => p.line)).toEqual([3, 6, 7]);
    expect(err.message.split('\n')).toEqual([
      'inline.yaml:3: rule "a": bad template "/runs/{foo}": unknown placeholder {foo} (known: {uuid}, {id}, {int})',
      'inline.yaml:6: rule "a": duplicate id (first defined on line 1)',
      'inline.yaml:7: rule "a": path "/x/" must not end with "/" (trailing slashes are ignored when matching)',
    ]);
  });

  it('reports schema problems and the problems of the rules the schema accepted together, by line', () => {
    const text = [
      'guards:',
      '  - { id: g1, by: ip, count: 0, per: 1m, category: G }',
      '  - { id: g2, by: ip, count: 5, per: 1m, category: G, rules: [a, nowhere] }',
      'rules:',
      '  - id: a',
      '    limits:',
      '      - { by: ip, count: 1, per: 10x, category: C }',
      '  - id: b',
      '    match: { path: /runs//query }',
      '    limits:',
      '      - { by: ip, count: 1, per: 10s, category: C }',
      '  - id: b',
      '    limits:',
      '      - { by: session, count: 1, per: 10s, category: C }',
      '  - id: c',
      '    limits:',
      '      - { by: ip, count: 1, per: 10s, category: C }',
      '  - id: c',
      '    limits:',
      '      - { by: ip, count: 1, per: 10s, category: C }',
    ].join('\n');
    const lines = parseError(text, 'all.yaml').message.split('\n');
    expect(lines.map((l) => l.split(':')[1])).toEqual(['2', '3', '7', '9', '14', '18']);
    expect(lines[0]).toMatch(/^all\.yaml:2: guard "g1": count must be at least 1, got 0$/);
    // Rule "a" fails the schema: the guard naming it is not blamed, the one naming nothing is.
    expect(lines[1]).toBe('all.yaml:3: guard "g2": rules[1] names no rule of this file: "nowhere"');
    expect(lines[2]).toMatch(/^all\.yaml:7: rule "a": limits\[0\]\.per: bad duration/);
    expect(lines[3]).toMatch(/^all\.yaml:9: rule "b": /);
    expect(lines[4]).toMatch(/^all\.yaml:14: rule "b": limits\[0\]\.by must be one of/);
    expect(lines[5]).toBe('all.yaml:18: rule "c": duplicate id (first defined on line 15)');
  });

  it('treats a file of comments only as empty', () => {
    expect(() => parseRuleFile('# nothing here\n', 'c.yaml')).toThrow(/^c\.yaml:1: the file is empty/);
  });

  it('rejects an empty list of rules', () => {
    expect(() => parseRuleFile('[]\n', 'l.yaml')).toThrow(/^l\.yaml:1: the file has no rules$/);
  });

  it('throws the fs error, not a RuleFileError, for a missing file', () => {
    expect(() => loadRuleFile(fixture('does-not-exist.yaml'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});

describe('loadRuleFile accepts the real files', () => {
  it.each(REGIONS)('rules/%s.yaml loads, with the default and catch-all last', (region) => {
    const file = regionRuleFile(rulesDir, region);
    const set = loadRuleFile(file);
    expect(set.file).toBe(file);
    expect(set.rules.map((r) => r.id).slice(-2)).toEqual(['default', 'public']);
    for (const rule of set.rules) expect(rule.source.file).toBe(file);
  });

  it('test/fixtures/seed-order.yaml (the table in its own order) loads', () => {
    const set = loadRuleFile(fixture('seed-order.yaml'));
    const ids = set.rules.map((r) => r.id);
    expect(ids).toHaveLength(22);
    expect(ids.slice(-6)).toEqual([
      'examples',
      'default-api-key',
      'default-user',
      'public-download',
      'runs-stats',
      'public',
    ]);
    const defaults = set.rules.filter((r) => r.id.startsWith('default-'));
    for (const rule of defaults) expect(rule.alternatives).toEqual([{ methods: null, path: null }]);
    expect(defaults.map((r) => r.limits.map((l) => l.by))).toEqual([['api-key'], ['user-ip']]);
  });

  it('records each rule’s source line (the line of its "- id:")', () => {
    const rules = loadRuleFile(fixture('seed-order.yaml')).rules;
    expect(rules[0]).toMatchObject({ id: 'high-throughput-public', source: { line: 8 } });
    expect(rules.at(-1)).toMatchObject({ id: 'public', source: { line: 131 } });
  });
});
