/** Server-sent events of a response, each handed to `onEvent` as it arrives; stops when it answers true or the stream ends. */
export interface SseEvent {
  readonly event: string;
  readonly id: string | null;
  readonly data: any;
}

export async function readEvents(res: Response, onEvent: (e: SseEvent) => boolean | Promise<boolean>): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        let id: string | null = null;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (data.length === 0) continue; // a comment (keep-alive)
        if (await onEvent({ event, id, data: JSON.parse(data.join('\n')) })) return;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
