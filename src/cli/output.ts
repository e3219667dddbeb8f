// The commands' Output lives in src/output.ts, shared with the services' own entry points; the CLI modules keep
// importing it from here.
export { consoleOutput, type Output } from '../output.ts';
