/**
 * What a build step may take from the gateway's environment to reach the network as the host does: where programs
 * are, which proxy to go through, which CAs to trust. Nothing else of the gateway's reaches git or npm.
 */
export const OUTBOUND_ENV = [
  'PATH',
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'NO_PROXY',
  'no_proxy',
  'ALL_PROXY',
  'all_proxy',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
] as const;

/** `names` of the gateway's environment that are set. */
export function passedEnv(names: readonly string[]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of names) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}
