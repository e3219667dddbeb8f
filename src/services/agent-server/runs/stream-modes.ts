/** What a run streams (`stream_mode`): each mode a kind of event of the graph. */
export const STREAM_MODES = ['values', 'updates', 'messages', 'messages-tuple', 'custom'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
/** What a thread's stream carries (thread-broadcasts.ts). */
export const THREAD_STREAM_MODES = ['run_modes', 'lifecycle', 'state_update'] as const;
export type ThreadStreamMode = (typeof THREAD_STREAM_MODES)[number];
