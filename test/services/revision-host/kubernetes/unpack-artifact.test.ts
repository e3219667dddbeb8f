import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ArtifactStore } from '../../../../src/services/control-plane/builds/artifacts.ts';
import {
  ArtifactMismatch,
  ArtifactUnavailable,
  fetchArtifact,
} from '../../../../src/services/revision-host/kubernetes/fetch-artifact.ts';
import { ArchiveRefused, unpackArtifact } from '../../../../src/services/revision-host/kubernetes/unpack-artifact.ts';

/**
 * What a pod does with its artifact before anything runs: the download checked against its sha256 (a mismatch is
 * deleted, nothing unpacked), and the archive read whole before a byte is written, refused when any entry would leave
 * the app folder (`..`, an absolute path, a link pointing out) or is not a file, folder or link. The hostile archives
 * are written byte by byte here (tar headers from the `tar` package), as an attacker would write them.
 */

let work: string;
afterEach(() => rmSync(work, { recursive: true, force: true }));
const fresh = () => (work = mkdtempSync(join(tmpdir(), 'unpack-')));

interface Entry {
  readonly path: string;
  readonly type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'FIFO';
  readonly body?: string;
  readonly linkpath?: string;
}

/** A gzipped tar of exactly these entries (no checks, no normalising: what a hostile archive holds). */
function archive(entries: readonly Entry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const type = e.type ?? 'File';
    const header = new Header({
      path: e.path,
      type,
      mode: type === 'Directory' ? 0o755 : 0o644,
      size: type === 'File' ? body.length : 0,
      mtime: new Date(0),
      ...(e.linkpath !== undefined && { linkpath: e.linkpath }),
    });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block);
    if (type === 'File' && body.length > 0) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

function write(entries: readonly Entry[]): { file: string; into: string } {
  const file = join(fresh(), 'a.tar.gz');
  writeFileSync(file, archive(entries));
  const into = join(work, 'app');
  mkdirSync(into);
  return { file, into };
}

describe('unpacking an artifact', () => {
  it('unpacks files, folders and links inside the folder', async () => {
    const { file, into } = write([
      { path: 'src/', type: 'Directory' },
      { path: 'src/graph.ts', body: 'export const graph = 1;\n' },
      { path: 'node_modules/.bin/tool', type: 'SymbolicLink', linkpath: '../tool/cli.js' },
      { path: 'copy.ts', type: 'Link', linkpath: 'src/graph.ts' },
    ]);
    await unpackArtifact(file, into);
    expect(readFileSync(join(into, 'src/graph.ts'), 'utf8')).toBe('export const graph = 1;\n');
    expect(readFileSync(join(into, 'copy.ts'), 'utf8')).toBe('export const graph = 1;\n');
  });

  const hostile: Record<string, Entry[]> = {
    'a `..` path': [{ path: '../escaped.txt', body: 'x' }],
    'a `..` inside a path': [{ path: 'src/../../escaped.txt', body: 'x' }],
    'an absolute path': [{ path: '/tmp/escaped-absolute.txt', body: 'x' }],
    'a symlink pointing out (relative)': [{ path: 'evil', type: 'SymbolicLink', linkpath: '../../../etc' }],
    'a symlink pointing out (absolute)': [{ path: 'evil', type: 'SymbolicLink', linkpath: '/etc/passwd' }],
    'a hard link to a path outside': [{ path: 'evil', type: 'Link', linkpath: '../outside' }],
    'a device': [{ path: 'tty', type: 'CharacterDevice' }],
  };
  for (const [what, entries] of Object.entries(hostile)) {
    it(`refuses the whole archive with ${what}: nothing is written`, async () => {
      // A harmless file first: it must not be written either.
      const { file, into } = write([{ path: 'first.txt', body: 'first' }, ...entries]);
      await expect(unpackArtifact(file, into)).rejects.toThrow(ArchiveRefused);
      expect(readdirSync(into)).toEqual([]);
      expect(readdirSync(work).sort()).toEqual(['a.tar.gz', 'app']);
    });
  }

  it('the refusal is one line naming the entry', async () => {
    const { file, into } = write([{ path: 'evil', type: 'SymbolicLink', linkpath: '/etc/passwd' }]);
    const err = await unpackArtifact(file, into).catch((e: Error) => e);
    expect((err as Error).message).toBe(
      'the artifact is refused: link "evil" points outside the app folder ("/etc/passwd"); nothing unpacked',
    );
  });

  it('a build packed by the gateway unpacks to the same files (links inside kept)', async () => {
    const src = join(fresh(), 'build');
    mkdirSync(join(src, 'node_modules/tool'), { recursive: true });
    writeFileSync(join(src, 'node_modules/tool/cli.js'), 'cli');
    mkdirSync(join(src, 'node_modules/.bin'));
    symlinkSync('../tool/cli.js', join(src, 'node_modules/.bin/tool'));
    const packed = await new ArtifactStore(join(work, 'artifacts'), 1 << 20).pack(src);
    const into = join(work, 'app');
    mkdirSync(into);
    await unpackArtifact(join(work, 'artifacts', `${packed.sha256}.tar.gz`), into);
    expect(readFileSync(join(into, 'node_modules/.bin/tool'), 'utf8')).toBe('cli');
  });
});

describe('fetching an artifact', () => {
  let server: Server;
  let url: string;
  const content = Buffer.from('the artifact bytes');
  const sha256 = createHash('sha256').update(content).digest('hex');
  const seen: (string | undefined)[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.url === '/missing') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/gzip' }).end(content);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('keeps a download whose sha256 matches, sent with the bearer token', async () => {
    const file = join(fresh(), 'a.tar.gz');
    await fetchArtifact({ url: `${url}/a`, token: 'tok', sha256 }, file);
    expect(readFileSync(file)).toEqual(content);
    expect(seen.at(-1)).toBe('Bearer tok');
  });

  it('deletes and refuses a download whose sha256 is another', async () => {
    const file = join(fresh(), 'a.tar.gz');
    const expected = 'f'.repeat(64);
    const err = await fetchArtifact({ url: `${url}/a`, token: 'tok', sha256: expected }, file).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ArtifactMismatch);
    expect((err as Error).message).toBe(
      `the artifact's sha256 is ${sha256}, expected ${expected}: refused, nothing unpacked`,
    );
    expect(existsSync(file)).toBe(false);
  });

  it('an answer other than 200 is one line', async () => {
    const file = join(fresh(), 'a.tar.gz');
    const err = await fetchArtifact({ url: `${url}/missing`, token: 'tok', sha256 }, file).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ArtifactUnavailable);
    expect((err as Error).message).toBe(`could not fetch the artifact: HTTP 404 from ${url}`);
  });
});
