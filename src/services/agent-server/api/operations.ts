import type { Context, Hono, MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import type { AgentEnv } from '../auth/authenticate.ts';
import { checked, readJsonBody } from '../../shared/json-body.ts';

/**
 * One API operation: where it lives, what it takes, what it answers and
 * how. `mount` registers it on Hono with body and query validation by its
 * schemas; openapi.ts describes it from the very same object.
 */
export interface ResponseSpec {
  readonly description: string;
  readonly schema?: z.ZodType;
  /** Default application/json. */
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

type Infer<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface Operation<
  B extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
> {
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI form: `/threads/{thread_id}`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: string;
  /** Served without authentication. */
  readonly public?: boolean;
  readonly body?: B;
  readonly query?: Q;
  /** Request headers the operation reads (documentation; the handler reads and checks them). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly responses: Readonly<Record<number, ResponseSpec>>;
  handler(c: Context<AgentEnv>, input: { body: Infer<B>; query: Infer<Q> }): Response | Promise<Response>;
}

/** Declares an operation with its handler's input typed by its schemas. */
export function operation<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined>(
  op: Operation<B, Q>,
): Operation {
  return op;
}

/** Registers every operation on `app`; the non-public ones behind `auth`; bodies nest at most `maxJsonDepth` deep. */
export function mount(
  app: Hono<AgentEnv>,
  ops: readonly Operation[],
  auth: MiddlewareHandler<AgentEnv>,
  maxJsonDepth?: number,
): void {
  for (const op of ops) {
    const path = op.path.replace(/\{([^}]+)\}/g, ':$1');
    const handle = async (c: Context<AgentEnv>) => {
      const body = op.body === undefined ? undefined : await readJsonBody(c, op.body, 'object', maxJsonDepth);
      const query = op.query === undefined ? undefined : checked(op.query, c.req.query(), 'query');
      return op.handler(c, { body, query });
    };
    if (op.public) app.on(op.method.toUpperCase(), path, handle);
    else app.on(op.method.toUpperCase(), path, auth, handle);
  }
}

/** A path parameter of the matched route. */
export function param(c: Context<AgentEnv>, name: string): string {
  return (c.req.param as (name: string) => string | undefined)(name) ?? '';
}
