import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/**
 * Fetches a revision's artifact from the gateway (`GET <REVISION_ARTIFACT_URL>` with the revision's bearer token) into
 * `file`, taking its sha256 as it streams. A download whose sha256 is not the expected one is deleted and refused
 * (ArtifactMismatch): the pod unpacks only the build its revision was made from.
 */
export class ArtifactMismatch extends Error {
  constructor(expected: string, actual: string) {
    super(`the artifact's sha256 is ${actual}, expected ${expected}: refused, nothing unpacked`);
    this.name = 'ArtifactMismatch';
  }
}

/** The gateway did not give the artifact (an answer other than 200, or the connection failed). */
export class ArtifactUnavailable extends Error {
  constructor(reason: string) {
    super(`could not fetch the artifact: ${reason}`);
    this.name = 'ArtifactUnavailable';
  }
}

export interface ArtifactSource {
  readonly url: string;
  readonly token: string;
  readonly sha256: string;
}

export async function fetchArtifact(src: ArtifactSource, file: string, signal?: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(src.url, { headers: { authorization: `Bearer ${src.token}` }, signal: signal ?? null });
  } catch (err) {
    throw new ArtifactUnavailable(
      (err as Error).cause instanceof Error ? (err as Error & { cause: Error }).cause.message : (err as Error).message,
    );
  }
  if (res.status !== 200 || res.body === null) {
    await res.body?.cancel();
    throw new ArtifactUnavailable(`HTTP ${res.status} from ${new URL(src.url).origin}`);
  }
  const hash = createHash('sha256');
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as WebReadableStream), measure, createWriteStream(file));
  } catch (err) {
    await rm(file, { force: true });
    throw new ArtifactUnavailable((err as Error).message);
  }
  const actual = hash.digest('hex');
  if (actual !== src.sha256.toLowerCase()) {
    await rm(file, { force: true });
    throw new ArtifactMismatch(src.sha256, actual);
  }
}
