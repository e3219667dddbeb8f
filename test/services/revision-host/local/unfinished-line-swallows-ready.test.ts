import { PassThrough } from 'node:stream';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { onMessages, writeMessage } from '../../../../src/services/revision-host/local/channel.ts';

/**
 * App code can write on its process's control channel (fd 3). A write it left unfinished (200 KB of garbage cut
 * short by the non-blocking socket, no newline) swallowed the next message, the revision's own `ready`: the revision
 * never loaded (seen on Node 24). Each message now starts on a line of its own.
 */
function channel() {
  const wire = new PassThrough();
  const received: unknown[] = [];
  onMessages(wire, (m) => received.push(m));
  const socket = { writable: true, write: (text: string) => wire.write(text) } as unknown as Socket;
  return { wire, received, socket };
}

describe('the control channel', () => {
  it('delivers a message after a garbage line left unfinished', async () => {
    const { wire, received, socket } = channel();
    wire.write('{"type":"ready","url":"http://evil"');
    writeMessage(socket, { type: 'ready', graphs: ['agent'] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([undefined, { type: 'ready', graphs: ['agent'] }]);
  });

  it('delivers a message after an unfinished line longer than a message may be', async () => {
    const { wire, received, socket } = channel();
    wire.write('x'.repeat(100_000));
    writeMessage(socket, { type: 'failed', reason: 'boom' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([undefined, { type: 'failed', reason: 'boom' }]);
  });

  it('delivers messages one by one, with no empty message between them', async () => {
    const { received, socket } = channel();
    writeMessage(socket, { type: 'verify', id: 1, key: 'k' });
    writeMessage(socket, { type: 'verify', id: 2, key: 'k' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([
      { type: 'verify', id: 1, key: 'k' },
      { type: 'verify', id: 2, key: 'k' },
    ]);
  });
});
