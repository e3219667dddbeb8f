/** What a run streams (`stream_mode`): each mode a kind of event of the graph, as the official Agent Server names them. */
export const STREAM_MODES = [
  'values',
  'updates',
  'messages',
  'messages-tuple',
  'custom',
  'debug',
  'events',
  'tasks',
  'checkpoints',
] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
/**
 * What a background run (`runs.create`, no `stream_mode`) streams for whoever joins it: the modes clients follow, not
 * the heavy ones (`events` puts a callback on every runnable; `checkpoints` and `debug` write the whole state again at
 * every step; `tasks` every node's input and output), which a run streams only when asked.
 */
export const BACKGROUND_STREAM_MODES: readonly StreamMode[] = [
  'values',
  'updates',
  'messages',
  'messages-tuple',
  'custom',
];
/** What a thread's stream carries (thread-broadcasts.ts). */
export const THREAD_STREAM_MODES = ['run_modes', 'lifecycle', 'state_update'] as const;
export type ThreadStreamMode = (typeof THREAD_STREAM_MODES)[number];
