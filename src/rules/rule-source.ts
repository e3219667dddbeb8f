import { createHash } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { compile, type Matcher } from './compile.ts';
import { parseRuleFile, RuleFileError } from './parse.ts';

export type ReloadResult =
  | { readonly result: 'ok'; readonly version: string }
  | { readonly result: 'unchanged'; readonly version: string }
  | { readonly result: 'invalid'; readonly error: RuleFileError | Error };

/**
 * The rule file in force. `current()` is what requests match against; a
 * reload reads, validates and compiles the file outside any request, then
 * swaps the matcher in one assignment. Invalid files are rejected and the
 * old rules keep serving. Buckets are keyed by rule id, so the buckets of
 * rules that did not change keep their state.
 */
export class RuleSource {
  private matcher: Matcher;
  private versionId: string;
  private watcher: FSWatcher | null = null;

  /** Loads the file; throws RuleFileError when it is invalid (boot fails). */
  constructor(readonly file: string) {
    const { matcher, version } = this.read();
    this.matcher = matcher;
    this.versionId = version;
  }

  current(): Matcher {
    return this.matcher;
  }

  get version(): string {
    return this.versionId;
  }

  reload(): ReloadResult {
    let next: { matcher: Matcher; version: string };
    try {
      next = this.read();
    } catch (err) {
      return { result: 'invalid', error: err as Error };
    }
    if (next.version === this.versionId) return { result: 'unchanged', version: this.versionId };
    this.matcher = next.matcher;
    this.versionId = next.version;
    return { result: 'ok', version: next.version };
  }

  /** Reloads when the file changes (watching its folder: editors and config maps replace files by renaming). */
  watch(onReload: (r: ReloadResult) => void, debounceMs = 100): void {
    let timer: NodeJS.Timeout | undefined;
    const name = basename(this.file);
    this.watcher = watch(dirname(this.file), (_event, changed) => {
      if (changed !== null && changed !== name && !changed.startsWith('..')) return;
      clearTimeout(timer);
      timer = setTimeout(() => onReload(this.reload()), debounceMs);
    });
    this.watcher.unref();
  }

  close(): void {
    this.watcher?.close();
  }

  private read(): { matcher: Matcher; version: string } {
    const text = readFileSync(this.file, 'utf8');
    const version = createHash('sha256').update(text).digest('hex').slice(0, 12);
    const { rules, guards } = parseRuleFile(text, this.file);
    return { matcher: compile(rules, guards), version };
  }
}
