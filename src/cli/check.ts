import { lint } from '../rules/lint.ts';
import { loadRuleFile } from '../rules/load.ts';
import { RuleFileError } from '../rules/parse.ts';
import type { Output } from '../process/output.ts';

/**
 * `gateway check <rule files>`: validate, then lint.
 * Exit 0 when every file is clean, 1 with findings, 2 when a file cannot be read.
 */
export function check(files: readonly string[], out: Output): number {
  if (files.length === 0) {
    out.err('usage: gateway check <rule file> [<rule file> ...]');
    return 2;
  }
  let status = 0;
  for (const file of files) {
    try {
      const set = loadRuleFile(file);
      const findings = lint(set);
      for (const f of findings) out.log(`${f.file}:${f.line}: rule "${f.rule}": ${f.kind}: ${f.reason}`);
      if (findings.length > 0) status = Math.max(status, 1);
      else out.log(`${file}: ${set.rules.length} rules, ${set.guards.length} guards, no findings`);
    } catch (err) {
      if (err instanceof RuleFileError) {
        for (const p of err.problems) out.log(`${p.file}:${p.line}: invalid: ${p.reason}`);
        status = Math.max(status, 1);
      } else {
        out.err(`${file}: cannot read: ${(err as Error).message}`);
        status = 2;
      }
    }
  }
  return status;
}
