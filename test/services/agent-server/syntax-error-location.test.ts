import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  isUnlocatedSyntaxError,
  locateSyntaxErrors,
} from '../../../src/services/agent-server/syntax-error-location.ts';

/** Where a plain JavaScript module's syntax error is (the build test, deployments/build-errors.test.ts, has the whole). */
const dir = mkdtempSync(join(tmpdir(), 'syntax-location-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('isUnlocatedSyntaxError', () => {
  it("is Node's SyntaxError and the module lexer's `Parse error`, not an error that says where", () => {
    expect(isUnlocatedSyntaxError(new SyntaxError("Unexpected identifier 'd'"))).toBe(true);
    expect(isUnlocatedSyntaxError(new Error('Parse error ./src/plain.mjs:1:1'))).toBe(true);
    expect(isUnlocatedSyntaxError(Object.assign(new SyntaxError('x'), { errors: [] }))).toBe(false);
    expect(isUnlocatedSyntaxError(new Error("Cannot find module 'left-pad'"))).toBe(false);
  });
});

describe('locateSyntaxErrors', () => {
  it('names the file among those the module imports, with line and column', async () => {
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'entry.mjs'), "import 'left-pad';\nexport { graph } from './lib/broken.mjs';\n");
    writeFileSync(join(dir, 'lib/broken.mjs'), 'export const graph = {\n  a: 1\n  b: 2\n};\n');
    const located = (await locateSyntaxErrors(join(dir, 'entry.mjs'))) as Error & { errors: unknown[] };
    expect(located.errors).toEqual([
      {
        text: 'Expected "}" but found "b"',
        location: expect.objectContaining({ file: join(dir, 'lib/broken.mjs'), line: 3, column: 2 }),
      },
    ]);
  });

  it('finds nothing in a module that parses (the error lies elsewhere)', async () => {
    writeFileSync(join(dir, 'fine.mjs'), "import { x } from './missing.mjs';\nexport const graph = x;\n");
    expect(await locateSyntaxErrors(join(dir, 'fine.mjs'))).toBeNull();
  });
});
