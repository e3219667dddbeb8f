/**
 * A module resolution hook for a revision's process (registered by
 * agent-process.ts): a bare `@langchain/...` import that the app's own
 * node_modules cannot satisfy is resolved from the gateway's installation,
 * so an app without a package.json (or without those dependencies) runs on
 * the gateway's LangGraph. Any other missing package stays an error the
 * load check reports. CommonJS `require` gets the same from NODE_PATH.
 */
const GATEWAY = new URL('../../../package.json', import.meta.url).href;

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.startsWith('@langchain/')) throw err;
    try {
      return await next(specifier, { ...context, parentURL: GATEWAY });
    } catch {
      throw err;
    }
  }
}
