import { AIMessage } from '@langchain/core/messages';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { LocalChatModel } from './model.ts';

/**
 * The example agent: a chat graph with two nodes.
 *
 *   START → greet → model → END
 *
 * `greet` says hello to the authenticated user on the first turn of a
 * conversation. The server puts that user at
 * `config.configurable.service_auth_user` (the object the custom auth handler
 * returned, or the owner of the API key); a node reads it there and never
 * stores credentials in the graph state.
 *
 * `model` answers with a local, deterministic chat model that streams its
 * answer word by word. `config.configurable.token_delay_ms` slows it down
 * (useful to watch the stream, or to cancel a run half way).
 */
interface AuthUser {
  readonly identity: string;
  readonly display_name?: string;
}

function authUser(config: LangGraphRunnableConfig): AuthUser | undefined {
  const user = config.configurable?.service_auth_user as AuthUser | undefined;
  return typeof user?.identity === 'string' ? user : undefined;
}

async function greet(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
  const firstTurn = !state.messages.some((m) => m.getType() === 'ai');
  if (!firstTurn) return {};
  const user = authUser(config);
  return { messages: [new AIMessage(user ? `Hello, ${user.identity}!` : 'Hello!')] };
}

async function model(state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) {
  const delay = Number(config.configurable?.token_delay_ms ?? 0);
  const chat = new LocalChatModel({ tokenDelayMs: Number.isFinite(delay) && delay > 0 ? delay : 0 });
  const reply = await chat.invoke(state.messages, config);
  return { messages: [reply] };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode('greet', greet)
  .addNode('model', model)
  .addEdge(START, 'greet')
  .addEdge('greet', 'model')
  .addEdge('model', END)
  .compile();

graph.name = 'agent';
