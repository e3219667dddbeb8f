/// <reference lib="dom" />
import { useStream } from '@langchain/react';
import { createElement as h, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

/**
 * The page the browser test drives: a chat built from @langchain/react's useStream, as its README writes one. The
 * query string names the API (`api`), the key (`key`) and, once the first message made one, the thread (`thread`),
 * so a reload comes back to the same conversation. Each text the last reply showed is kept in
 * `window.__replyTexts`, so the test can tell the reply came token by token. Plain `createElement` calls (no JSX):
 * the project's TypeScript has no JSX settings, and esbuild bundles it as it is.
 */
declare global {
  interface Window {
    __replyTexts: string[];
  }
}
window.__replyTexts = [];

const query = new URLSearchParams(location.search);

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((b: { text?: string }) => (typeof b === 'string' ? b : (b.text ?? ''))).join('');
  return '';
}

function Chat() {
  const [threadId, setThreadId] = useState<string | null>(query.get('thread'));
  const stream = useStream({
    apiUrl: query.get('api')!,
    apiKey: query.get('key')!,
    assistantId: 'reviewed',
    threadId,
    onThreadId: (id: string) => {
      setThreadId(id);
      const next = new URLSearchParams(location.search);
      next.set('thread', id);
      history.replaceState(null, '', `?${next}`);
    },
  });
  const [draft, setDraft] = useState('');
  const last = stream.messages.at(-1);
  const lastText = last ? textOf(last.content) : '';
  useEffect(() => {
    if (last?.getType?.() === 'ai' && window.__replyTexts.at(-1) !== lastText) window.__replyTexts.push(lastText);
  }, [last, lastText]);
  return h(
    'main',
    null,
    h(
      'ol',
      { id: 'messages' },
      stream.messages.map((m, i) => h('li', { key: m.id ?? i, 'data-role': m.getType?.() }, textOf(m.content))),
    ),
    stream.interrupt
      ? h(
          'div',
          { id: 'interrupt' },
          h('span', null, (stream.interrupt.value as { question?: string } | undefined)?.question),
          h('button', { id: 'approve', onClick: () => void stream.respond('yes') }, 'Approve'),
        )
      : null,
    h('p', { id: 'status' }, stream.isLoading ? 'loading' : 'idle'),
    h(
      'form',
      {
        onSubmit: (e: { preventDefault(): void }) => {
          e.preventDefault();
          void stream.submit({ messages: [{ type: 'human', content: draft }] });
          setDraft('');
        },
      },
      h('input', {
        id: 'input',
        value: draft,
        onChange: (e: { target: { value: string } }) => setDraft(e.target.value),
      }),
      h('button', { id: 'send', type: 'submit' }, 'Send'),
    ),
  );
}

createRoot(document.getElementById('root')!).render(h(Chat));
