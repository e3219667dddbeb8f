import { startGateway } from '../gateway.ts';
import { createLogger } from '../log.ts';
import { loadSettings } from '../settings.ts';
import type { Output } from './output.ts';

/** `gateway start`: run until SIGTERM/SIGINT, then close listeners and the store and exit 0. */
export async function start(_out: Output): Promise<number> {
  const settings = loadSettings();
  const log = createLogger(settings.logLevel);
  const gateway = await startGateway(settings, log);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  log.info({ signal }, 'shutting down');
  await gateway.close();
  log.flush();
  return 0;
}
