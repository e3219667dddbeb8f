import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';

/**
 * One node: answers the last message with who asked (the identity the auth handler returned, which the server puts
 * at `config.configurable.service_auth_user`) and what they said. No model, no network: it builds and runs anywhere.
 */
export const graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', (state: typeof MessagesAnnotation.State, config: LangGraphRunnableConfig) => {
    const user = config.configurable?.service_auth_user as { identity?: string } | undefined;
    const last = state.messages.at(-1);
    const text = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
    return { messages: [{ role: 'assistant', content: `hello ${user?.identity ?? 'anonymous'}: ${text}` }] };
  })
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
