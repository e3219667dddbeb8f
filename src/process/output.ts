/** Where a command writes: stdout for its answer, stderr for trouble. Injected so tests read both. */
export interface Output {
  log(line: string): void;
  err(line: string): void;
}

export const consoleOutput: Output = {
  log: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};
