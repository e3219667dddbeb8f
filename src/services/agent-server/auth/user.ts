/**
 * The authenticated user: `identity` plus whatever the custom handler
 * returned (or the API key's owner). Graphs read it at
 * `config.configurable.service_auth_user`.
 */
export interface AuthUser {
  readonly identity: string;
  readonly display_name: string;
  readonly is_authenticated: boolean;
  readonly permissions: readonly string[];
  readonly [field: string]: unknown;
}
