import { isIP } from 'node:net';
import { REGIONS, type Region } from '../region.ts';
import { InvalidPathError } from '../rules/normalize-path.ts';
import { RuleFileError } from '../rules/parse.ts';
import { loadEdgeSettings } from '../settings/edge.ts';
import { SettingsError } from '../settings/env.ts';
import { check } from './check.ts';
import { explain } from './explain.ts';
import { consoleOutput, type Output } from '../process/output.ts';
import { keysCommand } from './keys.ts';
import { limitsCommand, orgPlan } from './limits.ts';
import { commandArgs, USAGE_EXIT_CODE, UsageError } from './args.ts';
import { CHECK_USAGE, EXPLAIN_USAGE, REVISION_POD_USAGE, START_USAGE, USAGE } from './usage.ts';

/** Runs one command; returns the exit status. */
export async function main(argv: readonly string[], out: Output = consoleOutput): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'start':
        if (commandArgs('start', rest, {}, false).values.help) return help(START_USAGE, out);
        // Loaded only here: the gateway's whole graph (edge, services, LangGraph) would make every other command
        // start about four times slower.
        return await (await import('./start.ts')).start(out);
      case 'check': {
        const { values, positionals } = commandArgs('check', rest, {});
        return values.help ? help(CHECK_USAGE, out) : check(positionals, out);
      }
      case 'explain':
        return await runExplain(rest, out);
      case 'keys':
        return await keysCommand(rest, out);
      case 'limits':
        return await limitsCommand(rest, out);
      case 'revision-pod': {
        if (commandArgs('revision-pod', rest, {}, false).values.help) return help(REVISION_POD_USAGE, out);
        // Loaded only here, as `start`: the Agent Server's graph. It exits when done (the app may leave handles open).
        const code = await (await import('../services/revision-host/kubernetes/pod-main.ts')).podMain();
        process.exit(code);
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out.log(USAGE);
        return command === undefined ? 2 : 0;
      default:
        out.err(`gateway: unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (
      err instanceof SettingsError ||
      err instanceof RuleFileError ||
      err instanceof InvalidPathError ||
      err instanceof UsageError
    ) {
      const hint = err instanceof UsageError && err.hint !== undefined ? ` (${err.hint})` : '';
      out.err(`gateway ${command}: ${err.message}${hint}`);
      // A rule file `start` cannot use is a setting to fix, as every other start error (exit 2); elsewhere a finding.
      return err instanceof RuleFileError && command !== 'start' ? 1 : USAGE_EXIT_CODE;
    }
    throw err;
  }
}

function help(usage: string, out: Output): number {
  out.log(usage);
  return 0;
}

async function runExplain(args: readonly string[], out: Output): Promise<number> {
  const { values, positionals } = commandArgs('explain', args, {
    header: { type: 'string', short: 'H', multiple: true, default: [] },
    ip: { type: 'string', default: '127.0.0.1' },
    region: { type: 'string' },
    'rules-dir': { type: 'string' },
    json: { type: 'boolean', default: false },
    websocket: { type: 'boolean', default: false },
    org: { type: 'string' },
    'admin-url': { type: 'string' },
  });
  if (values.help) return help(EXPLAIN_USAGE, out);
  const [method, target] = positionals;
  if (!method || !target || positionals.length > 2)
    throw new UsageError('expected <METHOD> <path>', 'see gateway explain --help');
  const env = { ...process.env };
  if (values['rules-dir']) env.RULES_DIR = values['rules-dir'];
  const settings = loadEdgeSettings(env);
  if (isIP(values.ip) === 0) throw new UsageError(`--ip must be an IP address, got "${values.ip}"`);
  const region = (values.region ?? settings.region).toLowerCase();
  if (!REGIONS.includes(region as Region))
    throw new UsageError(`--region must be one of ${REGIONS.join(', ')}, got "${region}"`);
  return explain(
    {
      method: method.toUpperCase(),
      target,
      headers: parseHeaders(values.header),
      ip: values.ip,
      region: region as Region,
      json: values.json,
      websocket: values.websocket,
      ...(values.org !== undefined && { org: await orgPlan(values.org, settings, values['admin-url']) }),
    },
    settings,
    out,
  );
}

function parseHeaders(lines: readonly string[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i <= 0) throw new UsageError(`header must look like 'name: value', got "${line}"`);
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    const prev = headers[name];
    headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
  }
  return headers;
}
