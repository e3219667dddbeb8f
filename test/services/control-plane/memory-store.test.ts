import { MemoryControlPlaneStore } from '../../../src/services/control-plane/store/memory-store.ts';
import { storeContract } from './store-contract.ts';

storeContract('memory', async () => {
  const store = new MemoryControlPlaneStore('us');
  return { store, close: () => store.close() };
});
