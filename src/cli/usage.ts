/** What `gateway <command> --help` prints: each command's own usage, and the program's, which lists them all. */

export const START_USAGE = `usage: gateway start

  Runs the gateway until SIGTERM/SIGINT (then drains, DRAIN_SECONDS). Every setting comes from the environment
  (docs/configuration.md); there are no options. Exit 2 on a bad setting or a port in use (naming the variable).
`;

export const CHECK_USAGE = `usage: gateway check <rule file> [...]

  Validates and lints rule files, every problem of a file in one pass.
  Exit 0 clean, 1 findings, 2 a file unreadable (or a usage error). A file named like an option goes after --.
`;

export const EXPLAIN_USAGE = `usage: gateway explain <METHOD> <path> [options]

  Which rule decides a request, why, and its buckets.
      -H, --header 'name: value'   a request header (repeatable)
      --ip <address>               client IP (default 127.0.0.1)
      --region us|eu               rule region (default: REGION, else us)
      --rules-dir <dir>            rule folder (default: RULES_DIR, else rules)
      --json                       one JSON object
      --websocket                  the request is a WebSocket upgrade: how the socket and its commands are counted
      --org <organisation>         apply that organisation's overrides (gateway limits), read from the store
                                   (REDIS_URL), else from the admin listener (ADMIN_TOKEN, --admin-url)
      --admin-url <url>            the admin listener --org asks without REDIS_URL (default http://127.0.0.1:$ADMIN_PORT)
`;

export const REVISION_POD_USAGE = `usage: gateway revision-pod

  The entry of a revision's pod on Kubernetes (docs/control-plane.md#the-pods-entry): reads REVISION_ARTIFACT_URL,
  REVISION_ARTIFACT_SHA256, REVISION_KEY_CHECK_URL, REVISION_TOKEN and REVISION_CONTROL; fetches the build and checks
  its sha256, unpacks it, serves the app's Agent Server on port 8000 until SIGTERM (a 10 s drain). Exit 2 when it must
  not start (a variable missing, a sha256 mismatch, an archive leaving its folder), 1 when the build could not be
  fetched, 3 when the app does not load.
`;

export const USAGE = `usage: gateway <command> [--help]

  start                            run the gateway (settings from the environment, see docs/configuration.md)
  check <rule file> [...]          validate and lint rule files (exit 0 clean, 1 findings, 2 unreadable)
  explain <METHOD> <path> [options] which rule decides a request, why, and its buckets
  keys create --org <o> --workspace <w>
                                   create an API key in the registry (REDIS_URL); prints it once
  limits set|list|unset            plans per organisation: override a limit's numbers for one organisation
  revision-pod                     a revision's pod (the Kubernetes host runs it): fetch, verify, unpack, serve

  gateway <command> --help prints a command's usage.
`;
