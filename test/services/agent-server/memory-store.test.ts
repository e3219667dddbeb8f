import { MemoryAgentStore } from '../../../src/services/agent-server/memory-store.ts';
import { storeContract } from './store-contract.ts';

storeContract('memory', async () => new MemoryAgentStore());
