import type { Logger } from 'pino';
import type { ModuleRef } from '../../app-config.ts';
import type { SchemaParser, SourceSchemas } from './schema-parser.ts';

/**
 * The schemas of each graph of the app as read from its source (schema-parser.ts), once per graph: on the first
 * request that needs them (a graph whose state has no runtime schema: an `Annotation`), never at start, and kept for
 * the server's life. A source the parser cannot read (JavaScript, a default export, a compiler failure) gives no
 * schemas, logged once: the official server answers 500 to every such request, and parses again each time.
 */
export class GraphSourceSchemas {
  private readonly parsed = new Map<string, Promise<SourceSchemas>>();

  constructor(
    private readonly sources: ReadonlyMap<string, ModuleRef>,
    private readonly parser: SchemaParser,
    private readonly log: Logger,
  ) {}

  of(graphId: string): Promise<SourceSchemas> {
    let found = this.parsed.get(graphId);
    if (found === undefined) {
      found = this.read(graphId);
      this.parsed.set(graphId, found);
    }
    return found;
  }

  close(): Promise<void> {
    return this.parser.close();
  }

  private async read(graphId: string): Promise<SourceSchemas> {
    const ref = this.sources.get(graphId);
    if (ref === undefined) return {};
    const started = Date.now();
    try {
      const schemas = await this.parser.parse({ sourceFile: ref.file, exportSymbol: ref.exportName });
      this.log.info({ graph: graphId, ms: Date.now() - started }, 'graph schemas read from its source');
      return schemas;
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.log.warn({ graph: graphId, reason }, 'graph schemas could not be read from its source; it has none');
      return {};
    }
  }
}
