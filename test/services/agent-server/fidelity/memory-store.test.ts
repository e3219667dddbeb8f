import { MemorySaver } from '@langchain/langgraph';
import { MemoryAgentStore } from '../../../../src/services/agent-server/store/memory-agent-store.ts';
import { fidelityCases } from './cases.ts';

fidelityCases('memory store', async () => ({ store: new MemoryAgentStore(), checkpointer: new MemorySaver() }));
