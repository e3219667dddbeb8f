import { z } from 'zod';
import type { Operation } from '../operations.ts';

/**
 * The OpenAPI 3.1 document of the operations, generated from their zod
 * schemas (`z.toJSONSchema`: request bodies as the input side, responses
 * as the output side). Served at /openapi.json and rendered by /docs.
 */
export interface DocumentInfo {
  readonly title: string;
  readonly version: string;
  readonly description: string;
  /** The app has a custom auth handler: document bearer auth next to the API key. */
  readonly customAuth: boolean;
}

export function openApiDocument(ops: readonly Operation[], info: DocumentInfo): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const security = info.customAuth ? [{ bearer: [] }, { apiKey: [] }] : [{ apiKey: [] }];
  for (const op of ops) {
    const parameters = [
      ...[...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
      ...queryParameters(op.query),
      ...Object.entries(op.headers ?? {}).map(([name, description]) => ({
        name,
        in: 'header',
        required: false,
        description,
        schema: { type: 'string' },
      })),
    ];
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(op.responses)) {
      const contentType = spec.contentType ?? 'application/json';
      responses[status] = {
        description: spec.description,
        ...(spec.headers
          ? {
              headers: Object.fromEntries(
                Object.entries(spec.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]),
              ),
            }
          : {}),
        ...(spec.schema || contentType !== 'application/json'
          ? { content: { [contentType]: spec.schema ? { schema: jsonSchema(spec.schema, 'output') } : {} } }
          : {}),
      };
    }
    (paths[op.path] ??= {})[op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      ...(op.public ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(op.body, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    security,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'An API key of the organisation that owns the deployment.',
        },
        ...(info.customAuth
          ? { bearer: { type: 'http', scheme: 'bearer', description: "Checked by the app's custom auth handler." } }
          : {}),
      },
    },
    paths,
  };
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function queryParameters(schema: z.ZodType | undefined): Record<string, unknown>[] {
  if (schema === undefined) return [];
  const json = jsonSchema(schema, 'input') as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    schema: s,
  }));
}
