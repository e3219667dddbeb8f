import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * A command line the program cannot act on (an unknown option, a missing argument): one line on stderr and exit
 * USAGE_EXIT_CODE, never a stack trace. `hint` names where the usage is (`gateway explain --help`).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The exit status of a usage error; the CLI has always used 2 for it (and for bad settings). */
export const USAGE_EXIT_CODE = 2;

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util parseArgs for `gateway <command>`, with `-h` / `--help` on every command and Node's long errors
 * ("Unknown option '--bogus'. To specify a positional argument starting with a '-' ...") turned into a UsageError
 * naming the option. A file literally named `--x` is still reachable after `--`.
 */
export function commandArgs<O extends Options>(
  command: string,
  args: readonly string[],
  options: O,
  allowPositionals = true,
) {
  try {
    return parseArgs({
      args: [...args],
      allowPositionals,
      strict: true,
      options: { ...options, help: { type: 'boolean', short: 'h', default: false } },
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const hint = `see gateway ${command} --help`;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const option = /'([^']+)'/.exec((err as Error).message)?.[1] ?? '';
      throw new UsageError(`unknown option ${option}`, hint);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' || code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
      throw new UsageError(firstSentence((err as Error).message), hint);
    throw err;
  }
}

/** Node's parse errors go on to explain `--`; the first sentence is the part a user needs. */
function firstSentence(message: string): string {
  const end = message.indexOf('. ');
  return (end === -1 ? message : message.slice(0, end)).replace(/\.$/, '');
}
