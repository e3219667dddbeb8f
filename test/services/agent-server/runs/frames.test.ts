import { AIMessage, AIMessageChunk } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import {
  FrameMapper,
  frame,
  graphStreamModes,
  modeOfEvent,
  onlyModes,
} from '../../../../src/services/agent-server/runs/frames.ts';
import { uuid5 } from '../../../../src/services/agent-server/api/ids.ts';

const meta = (node: string) => ({ langgraph_node: node, tags: [] });
const events = (frames: { event: string; data: string }[]) => frames.map((f) => [f.event, JSON.parse(f.data)] as const);

describe('frame mapper', () => {
  it('asks the graph for values and updates always, and messages for either messages mode', () => {
    expect(graphStreamModes(['messages-tuple']).sort()).toEqual(['messages', 'updates', 'values']);
    expect(graphStreamModes(['custom']).sort()).toEqual(['custom', 'updates', 'values']);
  });

  it('forwards only the modes asked for, named after the mode, and keeps the last root values', () => {
    const m = new FrameMapper(new Set(['updates']));
    expect(m.map(['values', { n: 1 }])).toEqual([]);
    expect(events(m.map(['updates', { a: { n: 2 } }]))).toEqual([['updates', { a: { n: 2 } }]]);
    expect(m.map([['sub:1'], 'values', { n: 9 }])).toEqual([]);
    expect(m.lastValues).toEqual({ n: 1 });
  });

  it('names subgraph events with their namespace', () => {
    const m = new FrameMapper(new Set(['updates']));
    expect(m.map([['child:abc'], 'updates', { x: {} }])[0]?.event).toBe('updates|child:abc');
  });

  it('messages: metadata once, a growing partial per token, complete with the node’s final message', () => {
    const m = new FrameMapper(new Set(['messages']));
    const out = [
      ...m.map(['messages', [new AIMessageChunk({ id: 'm1', content: 'Hel' }), meta('model')]]),
      ...m.map(['messages', [new AIMessageChunk({ id: 'm1', content: 'lo' }), meta('model')]]),
      ...m.map(['updates', { model: { messages: [new AIMessage({ id: 'm1', content: 'Hello' })] } }]),
    ];
    expect(events(out).map(([e, d]) => [e, e === 'messages/metadata' ? Object.keys(d) : d[0].content])).toEqual([
      ['messages/metadata', ['m1']],
      ['messages/partial', 'Hel'],
      ['messages/partial', 'Hello'],
      ['messages/complete', 'Hello'],
    ]);
    expect(m.finish()).toEqual([]);
  });

  it('messages: a whole message is complete at once; unfinished ones complete at the end', () => {
    const m = new FrameMapper(new Set(['messages']));
    expect(
      events(m.map(['messages', [new AIMessage({ id: 'g', content: 'Hi!' }), meta('greet')]])).map(([e]) => e),
    ).toEqual(['messages/metadata', 'messages/complete']);
    m.map(['messages', [new AIMessageChunk({ id: 'x', content: 'par' }), meta('model')]]);
    expect(events(m.finish())).toEqual([
      ['messages/complete', [expect.objectContaining({ id: 'x', content: 'par', type: 'ai' })]],
    ]);
  });

  it('messages-tuple: event messages with [chunk, metadata]', () => {
    const m = new FrameMapper(new Set(['messages-tuple']));
    expect(events(m.map(['messages', [new AIMessageChunk({ id: 'm', content: 'a' }), meta('model')]]))).toEqual([
      ['messages', [expect.objectContaining({ content: 'a', type: 'ai', id: 'm' }), meta('model')]],
    ]);
  });
});

describe('default assistant ids', () => {
  it('are RFC 4122 v5 UUIDs (the public server derives the same)', () => {
    // Python: uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "agent")
    expect(uuid5('agent')).toBe('fe096781-5601-53d2-b2f6-0d3403f7e9ca');
    expect(uuid5('agent', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      uuid5('agent', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'),
    );
    expect(uuid5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });
});

describe('filtering a joined stream by mode', () => {
  it('names the mode of every event, subgraph events included; metadata and error belong to every mode', async () => {
    expect(
      [
        'values',
        'updates|sub:1',
        'messages/partial',
        'messages/complete|sub:1',
        'messages',
        'custom',
        'metadata',
        'error',
      ].map(modeOfEvent),
    ).toEqual(['values', 'updates', 'messages', 'messages', 'messages-tuple', 'custom', null, null]);
    async function* all() {
      for (const e of ['metadata', 'values', 'messages', 'updates', 'messages/partial', 'error']) yield frame(e, {});
    }
    const kept = [];
    for await (const f of onlyModes(all(), ['values', 'messages'])) kept.push(f.event);
    expect(kept).toEqual(['metadata', 'values', 'messages/partial', 'error']);
  });
});
