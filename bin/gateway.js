#!/usr/bin/env node
// The `gateway` program. Runs the TypeScript sources through tsx's loader, so
// there is no build step between `npm install` and `npx gateway`.
import { register } from 'tsx/esm/api';

register();
const argv = process.argv.slice(2);
if (argv[0] !== 'start') (await import('../src/process/output.ts')).exitQuietlyOnClosedPipe();
const { main } = await import('../src/cli/main.ts');
const code = await main(argv);
// A start that failed may leave connections retrying and listeners open: a failed command exits now.
if (code !== 0) process.exit(code);
