import { setTimeout as sleep } from 'node:timers/promises';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { BaseChatModel, type BaseChatModelParams } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';

/**
 * A chat model that needs no network and no key: its answer is a pure
 * function of the last user message, streamed one word at a time (so the
 * `messages` stream modes show real token-by-token chunks). Swap it for any
 * LangChain chat model (`ChatOpenAI`, `ChatAnthropic`, ...) in graph.ts.
 */
export interface LocalChatModelParams extends BaseChatModelParams {
  /** Pause before each token, ms (0 = as fast as possible). */
  readonly tokenDelayMs?: number;
}

export class LocalChatModel extends BaseChatModel {
  readonly tokenDelayMs: number;

  constructor(params: LocalChatModelParams = {}) {
    super(params);
    this.tokenDelayMs = params.tokenDelayMs ?? 0;
  }

  _llmType(): string {
    return 'local-echo';
  }

  /** The answer to `messages`: the same input always gives the same answer. */
  static answer(messages: readonly BaseMessage[]): string {
    const last = [...messages].reverse().find((m) => m.getType() === 'human');
    const said = last === undefined ? '' : typeof last.content === 'string' ? last.content : last.text;
    const words = said.trim() === '' ? 0 : said.trim().split(/\s+/).length;
    return `You said "${said.trim()}" (${words} ${words === 1 ? 'word' : 'words'}). I am a local model: no network, no keys, and the same answer every time.`;
  }

  /** The answer split into tokens: each word with the space after it. */
  static tokens(text: string): string[] {
    return text.match(/\S+\s*/g) ?? [text];
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const text = LocalChatModel.answer(messages);
    return { generations: [{ text, message: new AIMessage(text) }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    for (const token of LocalChatModel.tokens(LocalChatModel.answer(messages))) {
      if (this.tokenDelayMs > 0) await sleep(this.tokenDelayMs, undefined, { signal: options.signal });
      options.signal?.throwIfAborted();
      const chunk = new ChatGenerationChunk({ text: token, message: new AIMessageChunk({ content: token }) });
      // The callback is what LangGraph's `messages` stream mode listens to.
      await runManager?.handleLLMNewToken(token, undefined, undefined, undefined, undefined, { chunk });
      yield chunk;
    }
  }
}
