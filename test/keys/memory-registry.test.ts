import { MemoryKeyRegistry } from '../../src/keys/memory-registry.ts';
import { registryContract } from './contract.ts';

registryContract('memory', async () => {
  const registry = new MemoryKeyRegistry();
  return { registry, close: () => registry.close() };
});
