import { createRequire } from 'node:module';
import { operation, type Operation } from '../operations.ts';
import { z } from 'zod';

/**
 * GET /ok (liveness) and GET /info (version and flags); both need no authentication. The flags say what is really
 * served: assistants and crons (the cron scheduler runs in every server); LangSmith tracing is not.
 */
const require = createRequire(import.meta.url);

export const SERVER_VERSION = (require('../../../../../package.json') as { version: string }).version;
const LANGGRAPH_VERSION = ((): string | null => {
  try {
    return (require('@langchain/langgraph/package.json') as { version: string }).version;
  } catch {
    return null;
  }
})();

const okSchema = z.object({ ok: z.literal(true) });
const infoSchema = z.object({
  version: z.string(),
  langgraph_js_version: z.string().nullable(),
  context: z.literal('js'),
  flags: z.record(z.string(), z.boolean()),
});

export function systemOperations(): Operation[] {
  return [
    operation({
      method: 'get',
      path: '/ok',
      operationId: 'ok',
      summary: 'Liveness',
      tag: 'System',
      public: true,
      responses: { 200: { description: 'The server answers.', schema: okSchema } },
      handler: (c) => c.json({ ok: true }),
    }),
    operation({
      method: 'get',
      path: '/info',
      operationId: 'info',
      summary: 'Server version and features',
      tag: 'System',
      public: true,
      responses: { 200: { description: 'Version and flags.', schema: infoSchema } },
      handler: (c) =>
        c.json({
          version: SERVER_VERSION,
          langgraph_js_version: LANGGRAPH_VERSION,
          context: 'js',
          flags: { assistants: true, crons: true, langsmith: false },
        }),
    }),
  ];
}
