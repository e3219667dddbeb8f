import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseRuleFile } from './parse.ts';
import type { RuleSet } from './types.ts';
import type { Region } from '../region.ts';

/** Reads and validates one rule file. Throws RuleFileError (invalid) or the fs error (unreadable). */
export function loadRuleFile(file: string): RuleSet {
  return parseRuleFile(readFileSync(file, 'utf8'), file);
}

/** The rule file of a region: `<dir>/<region>.yaml`. */
export function regionRuleFile(dir: string, region: Region): string {
  return join(dir, `${region}.yaml`);
}
