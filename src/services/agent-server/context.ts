import type { BaseCheckpointSaver } from '@langchain/langgraph';
import type { Logger } from 'pino';
import type { HeaderFilter } from './api/runs/configurable-headers.ts';
import type { GraphSourceSchemas } from './api/assistants/source-schemas.ts';
import type { GraphRegistry } from './graphs.ts';
import type { AgentQuotas } from './quotas.ts';
import type { Runner } from './runs/runner.ts';
import type { AgentStore } from './store/agent-store.ts';
import type { CountedItemStore } from './store/item-quota.ts';
import type { Webhooks } from './runs/webhooks.ts';
import type { RunRelay } from './relay/run-relay.ts';
import type { ProtocolThreads } from './protocol/threads.ts';

/** What the route modules share. */
export interface ServerContext {
  readonly store: AgentStore;
  readonly graphs: GraphRegistry;
  readonly runner: Runner;
  /** Where thread state lives (the graphs run on it). */
  readonly checkpointer: BaseCheckpointSaver;
  /** The long-term memory store: graphs reach it as `config.store`, clients at `/store/items`. */
  readonly items: CountedItemStore;
  readonly log: Logger;
  /** Idle time before a `: heartbeat` comment on a run stream. */
  readonly heartbeatMs: number;
  /** Which request headers a run copies into `config.configurable` (configurable-headers.ts). */
  readonly configurableHeaders: HeaderFilter;
  /** Crons and store items a user and the server may hold (quotas.ts). */
  readonly quotas: AgentQuotas;
  /** Runs' webhooks: where they may point (checked as a run is created) and the calls. */
  readonly webhooks: Webhooks;
  /** Runs' frames and cancels to and from the other servers sharing the store (relay/run-relay.ts). */
  readonly relay: RunRelay;
  /** The threads the thread-centric protocol serves in this process (their events and readers). */
  readonly protocolThreads: ProtocolThreads;
  /** Each graph's JSON schemas as its TypeScript source declares them, read once on first need. */
  readonly sourceSchemas: GraphSourceSchemas;
}
