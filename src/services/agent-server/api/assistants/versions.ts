import { z } from 'zod';
import type { ServerContext } from '../../context.ts';
import { ApiError } from '../../errors.ts';
import type { Assistant } from '../../store/records.ts';
import { visibleAssistant } from './lookup.ts';
import { assistantSchema, assistantSetLatest, assistantVersions } from './schemas.ts';
import { errorSchema } from '../common-schemas.ts';
import { matchesExactly } from '../listing.ts';
import { operation, param, type Operation } from '../operations.ts';

/**
 * The versions of an assistant: each update makes one (`assistants.getVersions` lists them), and any of them can
 * become the current one again (`assistants.setLatest`).
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  422: { description: 'Invalid request.', schema: errorSchema },
};

export function assistantVersionOperations(ctx: ServerContext): Operation[] {
  const { store } = ctx;
  return [
    operation({
      method: 'post',
      path: '/assistants/{assistant_id}/versions',
      operationId: 'list_assistant_versions',
      summary: 'List the versions of an assistant',
      description:
        'Every version an update made (`assistants.getVersions`), newest first, optionally only those whose metadata has each given key.',
      tag: 'Assistants',
      body: assistantVersions,
      responses: {
        200: { description: 'Versions, newest first.', schema: z.array(assistantSchema.omit({ updated_at: true })) },
        ...errors,
        404: { description: 'Unknown assistant.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const assistant = await visibleAssistant(c, ctx, param(c, 'assistant_id'), 'read');
        const versions = (await store.listAssistantVersions(assistant.assistant_id)).filter((v) =>
          matchesExactly(v.metadata, body.metadata),
        );
        versions.sort((a, b) => b.version - a.version);
        return c.json(versions.slice(body.offset, body.offset + body.limit));
      },
    }),
    operation({
      method: 'post',
      path: '/assistants/{assistant_id}/latest',
      operationId: 'set_latest_assistant_version',
      summary: 'Make a version the current one',
      description:
        'The assistant takes the graph, config, context, metadata, name and description of that version (`assistants.setLatest`); the next update makes a new version after the newest.',
      tag: 'Assistants',
      body: assistantSetLatest,
      responses: {
        200: { description: 'The assistant.', schema: assistantSchema },
        ...errors,
        404: { description: 'Unknown assistant or version.', schema: errorSchema },
      },
      async handler(c, { body }) {
        const id = param(c, 'assistant_id');
        const assistant = await visibleAssistant(c, ctx, id, 'update', { assistant_id: id, version: body.version });
        const version = (await store.listAssistantVersions(assistant.assistant_id)).find(
          (v) => v.version === body.version,
        );
        if (version === undefined)
          throw new ApiError(404, `Assistant ${assistant.assistant_id} has no version ${body.version}`);
        const current: Assistant = { ...version, updated_at: new Date().toISOString() };
        await store.putAssistant(current);
        return c.json(current);
      },
    }),
  ];
}
