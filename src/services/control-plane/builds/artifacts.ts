import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, type ReadStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create as createTar } from 'tar';
import { BuildFailure } from './builder.ts';

/**
 * A build as an artifact: the build folder (the checkout with its dependencies, without its `.git`) packed into a gzipped tar, named by
 * its sha256 and kept content-addressed as `<ARTIFACTS_DIR>/<sha256>.tar.gz`. What a revision host that does not share
 * this machine's disk runs from (a pod fetches it through the internal endpoint, internal-routes.ts). The archive is
 * streamed to a temporary name while its sha256 and size are taken, then renamed: a reader never sees half of one,
 * and one bigger than `maxBytes` fails the build rather than fill the disk.
 */
export interface BuildArtifact {
  readonly sha256: string;
  readonly bytes: number;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
/** The checkout's own git folder, as tar names it from the build folder. */
const GIT_FOLDER = /^(\.\/)?\.git(\/|$)/;

/** Whether `text` is a sha256 as artifacts are named (lowercase hex): nothing else ever becomes a path. */
export const isSha256 = (text: string): boolean => SHA256_HEX.test(text);

export class ArtifactStore {
  constructor(
    /** ARTIFACTS_DIR: shared by every gateway replica that builds or serves artifacts (a ReadWriteMany volume). */
    readonly dir: string,
    /** The largest archive a build may make (the checkout's and the install's bounds together). */
    private readonly maxBytes: number,
  ) {}

  /** Packs `folder` (its contents, paths relative to it) into an artifact; a BuildFailure when it is too big. */
  async pack(folder: string): Promise<BuildArtifact> {
    await mkdir(this.dir, { recursive: true });
    const temp = join(this.dir, `.packing-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    let bytes = 0;
    const maxBytes = this.maxBytes;
    const measure = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        if (bytes > maxBytes) return done(new ArtifactTooBig(maxBytes));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      // portable: no owner names or ids of this host in the archive; symlinks are kept as links, never followed. The
      // checkout's `.git` stays out: the app does not need it, and its config may name the repository with credentials.
      const archive = createTar({ gzip: true, cwd: folder, portable: true, filter: (path) => !GIT_FOLDER.test(path) }, [
        '.',
      ]);
      await pipeline(archive, measure, createWriteStream(temp));
      const sha256 = hash.digest('hex');
      await rename(temp, this.pathOf(sha256));
      return { sha256, bytes };
    } catch (err) {
      if (err instanceof ArtifactTooBig) throw new BuildFailure(err.message);
      throw err;
    } finally {
      await rm(temp, { force: true });
    }
  }

  /** Whether the artifact is kept. */
  async has(sha256: string): Promise<boolean> {
    return isSha256(sha256) && (await stat(this.pathOf(sha256)).catch(() => null)) !== null;
  }

  /** The artifact's content as a stream, or null when it is not kept. */
  async open(sha256: string): Promise<{ stream: ReadStream; bytes: number } | null> {
    if (!isSha256(sha256)) return null;
    const path = this.pathOf(sha256);
    const info = await stat(path).catch(() => null);
    if (info === null || !info.isFile()) return null;
    return { stream: createReadStream(path), bytes: info.size };
  }

  async remove(sha256: string): Promise<void> {
    if (isSha256(sha256)) await rm(this.pathOf(sha256), { force: true });
  }

  /** The file of an artifact: only ever for a checked sha256 (never a path a request chose). */
  private pathOf(sha256: string): string {
    if (!isSha256(sha256)) throw new Error('not a sha256');
    return join(this.dir, `${sha256}.tar.gz`);
  }
}

class ArtifactTooBig extends Error {
  constructor(maxBytes: number) {
    super(
      `the build's artifact is over ${Math.round(maxBytes / 1024 / 1024)} MiB (CHECKOUT_MAX_MB + NODE_MODULES_MAX_MB)`,
    );
  }
}
