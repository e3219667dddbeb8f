import type { Item } from '@langchain/langgraph-checkpoint';
import type { Context } from 'hono';
import { z } from 'zod';
import type { AgentEnv } from '../../auth/authenticate.ts';
import type { Action, Filter } from '../../auth/filters.ts';
import type { ServerContext } from '../../context.ts';
import { forbidden, invalid, notFound } from '../../errors.ts';
import { operation, type Operation } from '../operations.ts';
import { errorSchema, object } from '../common-schemas.ts';
import { quotaOwner } from '../../quotas.ts';
import { checkValueSize, itemLimits, storeQuotaError } from './item-limits.ts';
import { filteredPage, visibleItem } from './item-filters.ts';

/**
 * The long-term memory store (`client.store`): items (a JSON value under a
 * namespace and a key) that graphs read and write as `config.store` and
 * clients through these routes, shared by every thread. The `store`
 * authorization handlers see `{namespace, key, ...}` for each action
 * (`put`, `get`, `delete`, `search`, `list_namespaces`): they may allow,
 * deny (403), or change the namespace (e.g. put each user's items under
 * their own identity).
 */
const errors = {
  401: { description: 'Not authenticated.', schema: errorSchema },
  400: {
    description: 'A filtered search or listing scanned 10,000 entries without filling its page: narrow it.',
    schema: errorSchema,
  },
  403: {
    description: 'Refused by the store authorization handler (or its filter, for a new item).',
    schema: errorSchema,
  },
  404: { description: "An item there that the store authorization handler's filter hides.", schema: errorSchema },
  422: {
    description: 'Invalid request (e.g. a namespace label with ":", or the reserved root "langgraph").',
    schema: errorSchema,
  },
};
const common = { tag: 'Store' } as const;

/** A store namespace: its labels (each without `.`, the separator of the GET form). */
const namespace = z.array(
  z
    .string()
    .min(1)
    .refine((label) => !label.includes('.'), 'a namespace label cannot contain "."'),
);

const storePut = z.object({
  namespace: namespace.min(1),
  key: z.string().min(1),
  value: object().describe('Any JSON object.'),
  index: z
    .union([z.literal(false), z.array(z.string())])
    .nullish()
    .describe('Accepted; this server keeps no search index.'),
  ttl: z
    .number()
    .positive()
    .nullish()
    .describe('Minutes until the item expires (fractions allowed); absent or null: never.'),
});

const storeGet = z.object({
  namespace: z
    .string()
    .min(1)
    .transform((text) => text.split('.'))
    .describe('Labels joined by "." (e.g. `users.u1`).'),
  key: z.string().min(1),
  refresh_ttl: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v !== 'false')
    .describe("Start the item's TTL again from now (default true)."),
});

const storeDelete = z.object({ namespace: namespace.min(1), key: z.string().min(1) });

const storeSearch = z.object({
  namespace_prefix: namespace.default([]).describe('Items in this namespace or under it; empty: every item.'),
  filter: object()
    .nullish()
    .describe('Fields of the value: a value to equal, or operators ($eq, $ne, $gt, $gte, $lt, $lte, $in, $nin).'),
  limit: z.number().int().min(1).max(1000).default(10),
  offset: z.number().int().min(0).default(0),
  query: z
    .string()
    .nullish()
    .describe('Accepted, not used: no semantic index (items come in namespace and key order).'),
  refresh_ttl: z.boolean().nullish().describe("Start the found items' TTLs again from now (default true)."),
});

const storeNamespaces = z.object({
  prefix: z.array(z.string()).nullish().describe('Labels the namespace starts with (`*`: any one label).'),
  suffix: z.array(z.string()).nullish().describe('Labels the namespace ends with (`*`: any one label).'),
  max_depth: z.number().int().min(1).nullish().describe('Cut namespaces to this many labels (duplicates merged).'),
  limit: z.number().int().min(1).max(1000).default(100),
  offset: z.number().int().min(0).default(0),
});

const storeItemSchema = z.object({
  namespace: z.array(z.string()),
  key: z.string(),
  value: object(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

const itemJson = (item: Item) => ({
  namespace: item.namespace,
  key: item.key,
  value: item.value,
  created_at: new Date(item.createdAt).toISOString(),
  updated_at: new Date(item.updatedAt).toISOString(),
});

export function storeOperations({ items, quotas }: ServerContext): Operation[] {
  const limits = itemLimits(quotas);
  /** Runs the `store:<action>` handler on `value` (it may change `value.namespace`); the namespace to use. */
  const authorized = async (
    c: Context<AgentEnv>,
    action: Action,
    value: Record<string, unknown>,
    field = 'namespace',
  ): Promise<{ namespace: string[]; filter: Filter | null }> => {
    const filter = await c.get('auth').authorize('store', action, value);
    const namespace = value[field];
    if (!Array.isArray(namespace) || !namespace.every((label) => typeof label === 'string')) {
      throw invalid({
        loc: ['body', field],
        msg: `the store authorization handler left ${field} not a list of labels`,
        type: 'value_error',
      });
    }
    return { namespace, filter };
  };
  return [
    operation({
      ...common,
      method: 'put',
      path: '/store/items',
      operationId: 'put_item',
      summary: 'Store an item',
      description: 'Creates or replaces the item at `namespace` and `key` (its `created_at` stays).',
      body: storePut,
      responses: {
        204: { description: 'Stored.' },
        409: {
          description: 'Quota exceeded: MAX_STORE_ITEMS, MAX_STORE_BYTES or their per-user forms.',
          schema: errorSchema,
        },
        413: { description: 'The value is larger than MAX_STORE_VALUE_BYTES.', schema: errorSchema },
        ...errors,
      },
      async handler(c, { body }) {
        const { namespace, filter } = await authorized(c, 'put', {
          namespace: body.namespace,
          key: body.key,
          value: body.value,
        });
        // As the official server: an item there the filter hides answers 404; a new one it would not match, 403.
        if (filter !== null) {
          const existing = await storeCall(() => items.get(namespace, body.key));
          if (existing !== null && !visibleItem(existing, filter)) throw notFound('Item', body.key);
          if (!visibleItem({ namespace, key: body.key, value: body.value }, filter)) throw forbidden('Not authorized');
        }
        checkValueSize(body.value, quotas);
        const owner = quotaOwner(c.get('auth').user);
        const refused = await storeCall(() =>
          items.putWithin(namespace, body.key, body.value, owner, limits, body.ttl),
        );
        if (refused !== null) throw storeQuotaError(refused, owner);
        return c.body(null, 204);
      },
    }),
    operation({
      ...common,
      method: 'get',
      path: '/store/items',
      operationId: 'get_item',
      summary: 'Get an item',
      description: 'The item, or `null` when there is none (as the JS client expects).',
      query: storeGet,
      responses: { 200: { description: 'The item, or null.', schema: storeItemSchema.nullable() }, ...errors },
      async handler(c, { query }) {
        const { namespace, filter } = await authorized(c, 'get', { namespace: query.namespace, key: query.key });
        const item = await storeCall(() => items.get(namespace, query.key));
        if (item !== null && !visibleItem(item, filter)) throw notFound('Item', query.key);
        if (item !== null && query.refresh_ttl) await items.refreshTtl([item]);
        return c.json(item === null ? null : itemJson(item));
      },
    }),
    operation({
      ...common,
      method: 'delete',
      path: '/store/items',
      operationId: 'delete_item',
      summary: 'Delete an item',
      description: 'Deleting an item that does not exist changes nothing.',
      body: storeDelete,
      responses: { 204: { description: 'Deleted.' }, ...errors },
      async handler(c, { body }) {
        const { namespace, filter } = await authorized(c, 'delete', { namespace: body.namespace, key: body.key });
        if (filter !== null) {
          const existing = await storeCall(() => items.get(namespace, body.key));
          if (existing !== null && !visibleItem(existing, filter)) throw notFound('Item', body.key);
          if (existing === null && !visibleItem({ namespace, key: body.key, value: {} }, filter))
            throw forbidden('Not authorized');
        }
        await storeCall(() => items.delete(namespace, body.key));
        return c.body(null, 204);
      },
    }),
    operation({
      ...common,
      method: 'post',
      path: '/store/items/search',
      operationId: 'search_items',
      summary: 'Search items',
      description:
        'Items in or under `namespace_prefix` whose value passes `filter`, in namespace and key order, paged by `limit` and `offset`.',
      body: storeSearch,
      responses: {
        200: {
          description: 'The items.',
          schema: z.object({ items: z.array(storeItemSchema.extend({ score: z.number().nullable() })) }),
        },
        ...errors,
      },
      async handler(c, { body }) {
        const value = {
          namespace: body.namespace_prefix,
          filter: body.filter ?? null,
          limit: body.limit,
          offset: body.offset,
          query: body.query ?? null,
        };
        const { namespace: prefix, filter } = await authorized(c, 'search', value);
        const search = (limit: number, offset: number) =>
          storeCall(() => items.search(prefix, { filter: body.filter ?? undefined, limit, offset }));
        const found =
          filter === null
            ? await search(body.limit, body.offset)
            : await filteredPage(search, (item) => visibleItem(item, filter), body);
        if (body.refresh_ttl !== false) await items.refreshTtl(found);
        return c.json({ items: found.map((item) => ({ ...itemJson(item), score: item.score ?? null })) });
      },
    }),
    operation({
      ...common,
      method: 'post',
      path: '/store/namespaces',
      operationId: 'list_namespaces',
      summary: 'List namespaces',
      description: 'Namespaces holding items, matching `prefix` and `suffix`, cut to `max_depth` labels, sorted.',
      body: storeNamespaces,
      responses: {
        200: { description: 'The namespaces.', schema: z.object({ namespaces: z.array(z.array(z.string())) }) },
        ...errors,
      },
      async handler(c, { body }) {
        const value = {
          namespace: body.prefix ?? [],
          suffix: body.suffix ?? null,
          max_depth: body.max_depth ?? null,
          limit: body.limit,
          offset: body.offset,
        };
        const { namespace: prefix, filter } = await authorized(c, 'list_namespaces', value);
        const list = (limit: number, offset: number) =>
          storeCall(() =>
            items.listNamespaces({
              prefix: prefix.length > 0 ? prefix : undefined,
              suffix: body.suffix ?? undefined,
              maxDepth: body.max_depth ?? undefined,
              limit,
              offset,
            }),
          );
        const namespaces =
          filter === null
            ? await list(body.limit, body.offset)
            : await filteredPage(list, (ns) => visibleItem({ namespace: ns }, filter), body);
        return c.json({ namespaces });
      },
    }),
  ];
}

/** A store call; a namespace the store refuses (InvalidNamespaceError) answers 422 with its reason. */
async function storeCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if ((err as Error).name !== 'InvalidNamespaceError') throw err;
    throw invalid({ loc: ['body', 'namespace'], msg: (err as Error).message, type: 'value_error' });
  }
}
