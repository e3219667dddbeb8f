import { Hono } from 'hono';

/**
 * Custom routes of the app (`http.app` in langgraph.json): a Hono app mounted before the API routes, behind the same
 * authentication (here the bearer tokens of auth.ts; the public paths /ok, /info and /docs stay public). The
 * authenticated user is `c.get('auth').user`, the object the auth handler returned.
 *
 *   GET /me → who the caller is, as the server sees them.
 */
interface Variables {
  auth?: { user: { identity: string; display_name?: string; permissions?: readonly string[] } };
}

export const app = new Hono<{ Variables: Variables }>();

app.get('/me', (c) => {
  const user = c.get('auth')?.user;
  if (user === undefined) return c.json({ detail: 'Not authenticated.' }, 401);
  return c.json({
    identity: user.identity,
    display_name: user.display_name ?? user.identity,
    permissions: user.permissions ?? [],
  });
});
