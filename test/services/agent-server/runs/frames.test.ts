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
  it('asks the graph for values always, messages for either messages mode, nothing of its own for events', () => {
    expect(graphStreamModes(['messages-tuple']).sort()).toEqual(['messages', 'values']);
    expect(graphStreamModes(['custom', 'events']).sort()).toEqual(['custom', 'values']);
    expect(graphStreamModes(['debug', 'tasks', 'checkpoints']).sort()).toEqual([
      'checkpoints',
      'debug',
      'tasks',
      'values',
    ]);
  });

  it('forwards only the modes asked for, named after the mode, and keeps the last root values', () => {
    const m = new FrameMapper(new Set(['updates']));
    expect(m.map(['values', { n: 1 }])).toEqual([]);
    expect(events(m.map(['updates', { a: { n: 2 } }]))).toEqual([['updates', { a: { n: 2 } }]]);
    expect(m.map([['sub:1'], 'values', { n: 9 }])).toEqual([]);
    expect(m.lastValues).toEqual({ n: 1 });
  });

  it('without stream_subgraphs, keeps of the subgraphs only their chat models’ tokens, for messages', () => {
    const m = new FrameMapper(new Set(['updates', 'messages', 'messages-tuple']));
    expect(m.map([['child:abc'], 'updates', { x: {} }])).toEqual([]);
    const token = new AIMessageChunk({ id: 't', content: 'a' });
    expect(m.map([['child:abc'], 'messages', [token, meta('model')]]).map((f) => f.event)).toEqual([
      'messages/metadata',
      'messages/partial',
    ]);
  });

  it('names subgraph events with their namespace', () => {
    const m = new FrameMapper(new Set(['updates']), true);
    expect(m.map([['child:abc'], 'updates', { x: {} }])[0]?.event).toBe('updates|child:abc');
    expect(m.map([['child:abc', 'grand:def'], 'updates', { x: {} }])[0]?.event).toBe('updates|child:abc|grand:def');
  });

  it('messages: metadata once, a growing partial per token, then values before complete (input messages too)', () => {
    const m = new FrameMapper(new Set(['messages', 'values']));
    const human = { id: 'h1', type: 'human', content: 'hi' };
    const out = [
      ...m.map(['values', { messages: [human] }]),
      ...m.map(['messages', [new AIMessageChunk({ id: 'm1', content: 'Hel' }), meta('model')]]),
      ...m.map(['messages', [new AIMessageChunk({ id: 'm1', content: 'lo' }), meta('model')]]),
      ...m.map(['values', { messages: [human, new AIMessage({ id: 'm1', content: 'Hello' })] }]),
    ];
    expect(
      events(out).map(([e, d]) => [
        e,
        e === 'messages/metadata' ? Object.keys(d) : e === 'values' ? d.messages.length : d.map((x: any) => x.content),
      ]),
    ).toEqual([
      ['values', 1],
      ['messages/complete', ['hi']],
      ['messages/metadata', ['m1']],
      ['messages/partial', ['Hel']],
      ['messages/partial', ['Hello']],
      ['values', 2],
      ['messages/complete', ['Hello']],
    ]);
  });

  it('messages: a whole message a node returns is complete with the state, never partial', () => {
    const m = new FrameMapper(new Set(['messages']));
    expect(m.map(['messages', [new AIMessage({ id: 'g', content: 'Hi!' }), meta('greet')]])).toEqual([]);
    expect(events(m.map(['values', { messages: [new AIMessage({ id: 'g', content: 'Hi!' })] }]))).toEqual([
      ['messages/complete', [expect.objectContaining({ id: 'g', content: 'Hi!', type: 'ai' })]],
    ]);
    // Seen once: the next state completes nothing again.
    expect(m.map(['values', { messages: [new AIMessage({ id: 'g', content: 'Hi!' })] }])).toEqual([]);
  });

  it('messages: chunks of another copy of @langchain/core are recognised by their markers', () => {
    class AIMessageChunk2 {
      static lc_name = () => 'AIMessageChunk';
      lc_namespace = ['langchain_core', 'messages'];
      constructor(
        public id: string,
        public content: string,
      ) {}
      _getType = () => 'ai';
      concat = (o: AIMessageChunk2) => new AIMessageChunk2(this.id, this.content + o.content);
      toDict = () => ({ type: 'ai', data: { id: this.id, content: this.content } });
    }
    const m = new FrameMapper(new Set(['messages']));
    const out = [
      ...m.map(['messages', [new AIMessageChunk2('x', 'a'), meta('model')]]),
      ...m.map(['messages', [new AIMessageChunk2('x', 'b'), meta('model')]]),
    ];
    expect(events(out).map(([e, d]) => [e, e === 'messages/partial' ? d[0].content : null])).toEqual([
      ['messages/metadata', null],
      ['messages/partial', 'a'],
      ['messages/partial', 'ab'],
    ]);
  });

  it('messages-tuple: event messages with [chunk, metadata]', () => {
    const m = new FrameMapper(new Set(['messages-tuple']));
    expect(events(m.map(['messages', [new AIMessageChunk({ id: 'm', content: 'a' }), meta('model')]]))).toEqual([
      ['messages', [expect.objectContaining({ content: 'a', type: 'ai', id: 'm' }), meta('model')]],
    ]);
  });

  it('checkpoints and debug: checkpoint ids beside the configs, without internal keys or the user', () => {
    const config = {
      configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: 'c2', __pregel_x: 1, langgraph_auth_user: {} },
      callbacks: {},
    };
    const parent = { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: 'c1' } };
    const task = { id: 'k', name: 'child', state: { configurable: { thread_id: 't', checkpoint_ns: 'child:k' } } };
    const payload = { config, parentConfig: parent, values: {}, metadata: {}, next: ['child'], tasks: [task] };
    const m = new FrameMapper(new Set(['checkpoints', 'debug']));
    const [checkpoint] = events(m.map(['checkpoints', payload]));
    expect(checkpoint![0]).toBe('checkpoints');
    expect(checkpoint![1]).toEqual({
      config: { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: 'c2' } },
      parent_config: parent,
      checkpoint: { thread_id: 't', checkpoint_ns: '', checkpoint_id: 'c2', checkpoint_map: null },
      parent_checkpoint: { thread_id: 't', checkpoint_ns: '', checkpoint_id: 'c1', checkpoint_map: null },
      values: {},
      metadata: {},
      next: ['child'],
      tasks: [
        {
          id: 'k',
          name: 'child',
          checkpoint: { thread_id: 't', checkpoint_ns: 'child:k', checkpoint_id: null, checkpoint_map: null },
        },
      ],
    });
    const [debug] = events(m.map(['debug', { type: 'checkpoint', step: 1, timestamp: 'x', payload }]));
    expect(debug![1].payload).toEqual(checkpoint![1]);
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
        'messages/complete',
        'tasks|sub:1',
        'checkpoints',
        'debug',
        'events',
        'messages',
        'custom',
        'metadata',
        'error',
      ].map(modeOfEvent),
    ).toEqual([
      'values',
      'updates',
      'messages',
      'messages',
      'tasks',
      'checkpoints',
      'debug',
      'events',
      'messages-tuple',
      'custom',
      null,
      null,
    ]);
    async function* all() {
      for (const e of ['metadata', 'values', 'messages', 'updates', 'messages/partial', 'error']) yield frame(e, {});
    }
    const kept = [];
    for await (const f of onlyModes(all(), ['values', 'messages'])) kept.push(f.event);
    expect(kept).toEqual(['metadata', 'values', 'messages/partial', 'error']);
  });
});
