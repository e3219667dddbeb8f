import { bucketKey } from '../limiter/bucket-key.ts';
import { amountOf, amountText, type Amount } from './explain-amount.ts';
import { commandsPath, WORK_METHODS } from '../edge/ws-commands.ts';
import type { Output } from '../process/output.ts';
import type { Matcher, MatchRequest } from '../rules/compile.ts';
import { identityOf } from '../rules/identity.ts';
import type { EdgeSettings } from '../settings/edge.ts';
import type { Region } from '../region.ts';

/** What `gateway explain ... --websocket` adds: how the edge counts the upgrade, and the commands inside the socket. */
export interface WebSocketExplanation {
  /** The upgrade is refused before any rule (not a GET). */
  readonly refused: string | null;
  /** The HTTP request each work command inside the socket counts as, or null when the socket's messages are not read. */
  readonly commands_as: string | null;
  readonly commands_rule: string | null;
  readonly commands_limits: readonly (Amount & { policy: string; key: string })[];
  readonly max_per_ip: number;
  readonly idle_timeout_ms: number;
}

export function explainWebSocket(
  request: MatchRequest,
  matcher: Matcher,
  settings: EdgeSettings,
  region: Region,
): WebSocketExplanation {
  const commands = request.method === 'GET' ? commandsPath(request.path) : null;
  const command = commands === null ? null : matcher.match({ ...request, method: 'POST', path: commands });
  const scheme = { prefix: settings.keyPrefix, region, secret: settings.identitySecret };
  return {
    refused: request.method === 'GET' ? null : 'a WebSocket upgrade must be a GET: the edge answers 400',
    commands_as: commands === null ? null : `POST ${commands}`,
    commands_rule: command?.rule.id ?? null,
    commands_limits: (command?.limits ?? []).map((l) => ({
      policy: l.policy,
      ...amountOf(l),
      key: bucketKey(scheme, l.scope, l.by, identityOf(request, l.by)),
    })),
    max_per_ip: settings.webSocketMaxPerIp,
    idle_timeout_ms: settings.webSocketIdleMs,
  };
}

export function printWebSocket(w: WebSocketExplanation, out: Output): void {
  out.log('');
  out.log('WebSocket upgrade (Upgrade: websocket):');
  if (w.refused !== null) {
    out.log(`  refused: ${w.refused}`);
    return;
  }
  out.log('  the upgrade is counted once, as the request above (denied: 429 with RateLimit headers, no socket).');
  out.log(
    `  at most ${w.max_per_ip} open per client address per edge process (WEBSOCKET_MAX_PER_IP); closed (1001) after ${w.idle_timeout_ms / 1000}s idle (WEBSOCKET_IDLE_TIMEOUT) and on drain.`,
  );
  if (w.commands_as === null) {
    out.log('  messages inside the socket are piped, not counted (only /threads/{id}/stream/events carries commands).');
    return;
  }
  const methods = [...WORK_METHODS].join(', ');
  if (w.commands_rule === null) {
    out.log(`  each ${methods} command inside counts as ${w.commands_as}: no rule decides it, so it is not limited.`);
    return;
  }
  out.log(`  each ${methods} command inside counts as ${w.commands_as} (rule ${w.commands_rule}); over the limit the`);
  out.log('  socket closes with 4429 and the command never reaches the upstream. Other commands are not counted.');
  out.log(
    '  In-flight slots are held while the socket is open, and (until: run) after it closes until the thread has no',
  );
  out.log('  run queued or running.');
  for (const l of w.commands_limits) {
    out.log(`    ${l.policy}: ${amountText(l)}`);
    out.log(`        key ${l.key}`);
  }
}
