import { Auth, HTTPException, isStudioUser } from '@langchain/langgraph-sdk/auth';

/**
 * The example's custom authentication, written with the public JS `Auth`
 * API so it works unchanged on the hosted platform.
 *
 * Authentication: `Authorization: Bearer <token>`, looked up in a small
 * token table. A real app verifies a JWT or asks its identity provider here
 * (and keeps secrets in the environment, never in this file or in graph
 * state). Anything else is 401 with a reason.
 *
 * Authorization: every thread records its creator in `metadata.owner`, and
 * every thread read, search and run is filtered to the caller's own
 * threads, so two users never see each other's conversations; crons the
 * same. An update never changes `metadata.owner` (a user cannot plant a
 * thread in another user's list). The design studio's user gets an empty
 * filter: developer access to every thread.
 * Assistants: every user may read them all. A user's own assistants record
 * their creator in `metadata.owner`, and only they may change or delete
 * them; the system assistants the server makes from the graphs have no owner,
 * so they are read-only to users (changing one would break every user's
 * runs). Store items (long-term
 * memory) must sit under a namespace starting with the caller's identity
 * (`["alice", ...]`); anything else is 403 (an HTTPException, with a message
 * that says why).
 */
const TOKENS: Readonly<Record<string, { identity: string; display_name: string; role: string }>> = {
  'alice-token': { identity: 'alice', display_name: 'Alice', role: 'admin' },
  'bob-token': { identity: 'bob', display_name: 'Bob', role: 'user' },
};

/** A metadata patch without `owner`: an update keeps the owner recorded at creation. */
const keepOwner = (metadata: Record<string, unknown> | null | undefined) => {
  if (metadata == null) return metadata;
  const { owner: _ignored, ...rest } = metadata;
  return rest;
};

/** Only the caller's own threads; everything for the design studio's user. */
const ownThreads = (user: Parameters<typeof isStudioUser>[0]): Record<string, string> =>
  isStudioUser(user) ? {} : { owner: user.identity };

export const auth = new Auth()
  .authenticate(async (request: Request) => {
    const header = request.headers.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header.trim());
    if (match === null)
      throw new HTTPException(401, { message: 'Missing bearer token: send Authorization: Bearer <token>.' });
    const user = TOKENS[match[1]!];
    if (user === undefined) throw new HTTPException(401, { message: 'Invalid bearer token.' });
    return {
      ...user,
      permissions:
        user.role === 'admin' ? ['threads:write', 'threads:read', 'admin'] : ['threads:write', 'threads:read'],
    };
  })
  .on('threads:create', ({ user, value }) => {
    value.metadata = { ...value.metadata, owner: user.identity };
  })
  .on('threads:create_run', ({ user, value }) => {
    value.metadata = { ...value.metadata, owner: user.identity };
    return ownThreads(user);
  })
  .on('threads:update', ({ user, value }) => {
    value.metadata = keepOwner(value.metadata);
    return ownThreads(user);
  })
  .on('threads', ({ user }) => ownThreads(user))
  // Assistants: readable by all; writable by their creator only (system assistants have no owner: read-only).
  .on('assistants:create', ({ user, value }) => {
    value.metadata = { ...value.metadata, owner: user.identity };
    return ownThreads(user); // `if_exists: do_nothing` on someone else's assistant: 409
  })
  .on('assistants:update', ({ user, value }) => {
    value.metadata = keepOwner(value.metadata);
    return ownThreads(user);
  })
  .on('assistants:delete', ({ user }) => ownThreads(user))
  .on('assistants', () => true)
  // Crons follow the same rule as threads: each records its creator, and each user sees only their own.
  .on('crons:create', ({ user, value }) => {
    const metadata = value.payload?.metadata as Record<string, unknown> | undefined;
    value.payload = { ...value.payload, metadata: { ...metadata, owner: user.identity } };
  })
  .on('crons:update', ({ user, value }) => {
    const payload = value.payload as { metadata?: Record<string, unknown> } | undefined;
    if (payload?.metadata != null) value.payload = { ...payload, metadata: keepOwner(payload.metadata) };
    return ownThreads(user);
  })
  .on('crons', ({ user }) => ownThreads(user))
  // Long-term memory: each user's items live under a namespace that starts with their identity.
  // Refusing the documented way: an HTTPException answers its status and message (a handler returning false answers a
  // plain 403).
  .on('store', ({ user, value }) => {
    if (isStudioUser(user) || value.namespace?.[0] === user.identity) return;
    throw new HTTPException(403, {
      message: `Store items of ${user.identity} live under namespaces starting with "${user.identity}".`,
    });
  });
