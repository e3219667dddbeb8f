import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SchemaParser } from '../../../../src/services/agent-server/api/assistants/schema-parser.ts';

/**
 * The child process that reads graphs' schemas from their TypeScript source: one job at a time, a job over its time or its
 * memory fails alone (the next one gets a fresh process), a source it cannot read fails its job, and closing fails what
 * waits.
 */
const source = (file: string) => fileURLToPath(new URL(`../fixtures/schemas-app/${file}`, import.meta.url));
const PARENT = { sourceFile: source('subgraphs.ts'), exportSymbol: 'parent' };
// A parse takes seconds, more on a loaded machine; the tests never depend on how long.
const SLOW = 600_000;

describe('the source schema parser', () => {
  let parser: SchemaParser | undefined;
  afterEach(async () => {
    await parser?.close();
  });

  it('parses queued graphs one after the other, each with its subgraphs', { timeout: SLOW }, async () => {
    parser = new SchemaParser({ timeoutMs: () => SLOW });
    const [parent, annotated] = await Promise.all([
      parser.parse(PARENT),
      parser.parse({ sourceFile: source('annotation.ts'), exportSymbol: 'annotated' }),
    ]);
    expect(Object.keys(parent).sort()).toEqual(['parent', 'parent|outer', 'parent|outer|inner']);
    expect(parent['parent|outer|inner']!.state).toMatchObject({
      properties: { note: { type: 'string' }, count: { type: 'number' } },
    });
    expect(Object.keys(annotated)).toEqual(['annotated']);
  });

  it('fails a job that runs over its time, and the next job still runs', { timeout: SLOW }, async () => {
    let timeoutMs = 1;
    parser = new SchemaParser({ timeoutMs: () => timeoutMs });
    await expect(parser.parse(PARENT)).rejects.toThrow('timed out after 1 ms');
    timeoutMs = SLOW;
    expect(Object.keys(await parser.parse(PARENT))).toContain('parent|outer');
  });

  it('fails a job that runs out of its heap, and the server lives on', { timeout: SLOW }, async () => {
    parser = new SchemaParser({ timeoutMs: () => SLOW, heapMb: 16 });
    await expect(parser.parse(PARENT)).rejects.toThrow('the parser ran out of memory');
    await expect(parser.parse(PARENT)).rejects.toThrow('the parser ran out of memory');
  });

  it('fails the job of a source it cannot read, with the reason', { timeout: SLOW }, async () => {
    parser = new SchemaParser({ timeoutMs: () => SLOW });
    await expect(parser.parse({ sourceFile: source('plain.mjs'), exportSymbol: 'untyped' })).rejects.toThrow(/./);
    await expect(parser.parse({ sourceFile: source('annotation.ts'), exportSymbol: 'missing' })).rejects.toThrow(
      'Failed to find export "missing"',
    );
  });

  it('fails what waits when it closes, and takes no more jobs', { timeout: SLOW }, async () => {
    parser = new SchemaParser({ timeoutMs: () => SLOW });
    const outcomes = [parser.parse(PARENT), parser.parse(PARENT)].map((job) =>
      job.then(
        () => 'parsed',
        (err: Error) => err.message,
      ),
    );
    await parser.close();
    expect(await Promise.all(outcomes)).toEqual(['the server is closing', 'the server is closing']);
    await expect(parser.parse(PARENT)).rejects.toThrow('the server is closing');
  });
});
