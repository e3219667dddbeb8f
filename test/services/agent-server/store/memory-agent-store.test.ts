import { MemoryAgentStore } from '../../../../src/services/agent-server/store/memory-agent-store.ts';
import { storeContract } from './agent-store-contract.ts';

storeContract('memory', async () => new MemoryAgentStore());
