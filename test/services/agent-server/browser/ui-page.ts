/// <reference lib="dom" />
import { useStream } from '@langchain/langgraph-sdk/react';
import { LoadExternalComponent } from '@langchain/langgraph-sdk/react-ui';
import { createElement as h } from 'react';
import { createRoot } from 'react-dom/client';

/**
 * The page the generative UI browser test drives: a graph's UI message shown with `LoadExternalComponent`, as the
 * SDK's README writes it (the stream from `useStream`, the message `{type: "ui", name, props}`). The query string
 * names the API (`api`), the key (`key`) and the component (`name`). Plain `createElement` calls (no JSX): the
 * project's TypeScript has no JSX settings.
 */
const query = new URLSearchParams(location.search);

function Page() {
  const stream = useStream({ apiUrl: query.get('api')!, apiKey: query.get('key')!, assistantId: 'agent' });
  const message = { id: 'ui-1', type: 'ui' as const, name: query.get('name')!, props: { city: 'Paris' } };
  return h(LoadExternalComponent, {
    stream,
    message,
    fallback: h('span', { id: 'fallback' }, 'loading'),
  });
}

createRoot(document.getElementById('root')!).render(h(Page));
