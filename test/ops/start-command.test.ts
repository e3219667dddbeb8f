import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` (package.json) and the container (Dockerfile ENTRYPOINT) run the gateway with the same node flags, and the
 * edge benchmark (bench/peers/edge-targets.ts) reads them from package.json: what is benchmarked is what runs.
 */
const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

describe('the start command', () => {
  it('npm start and the Dockerfile give node the same flags', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    const npmFlags = /^node (.*?)\s*bin\/gateway\.js start$/.exec(start)?.[1]?.split(/\s+/).filter(Boolean);
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    const [node, ...rest] = JSON.parse(entrypoint ?? '[]') as string[];
    expect(node).toBe('node');
    expect(rest.at(-1)).toBe('bin/gateway.js');
    expect(npmFlags).toBeDefined();
    expect(rest.slice(0, -1)).toEqual(npmFlags);
    expect(npmFlags).toContain('--max-semi-space-size=64');
  });

  it('the image uses every CPU once REDIS_URL is given (WORKERS=auto); npm start runs one process', () => {
    expect(read('Dockerfile')).toMatch(/^ENV WORKERS=auto$/m);
    expect((JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start).not.toMatch(/WORKERS/);
  });
});
