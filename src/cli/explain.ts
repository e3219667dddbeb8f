import { bucketKey } from '../limiter/bucket-key.ts';
import { compile } from '../rules/compile.ts';
import { explainMatch } from '../rules/explain.ts';
import { amountOf, amountText, type Amount } from './explain-amount.ts';
import { explainWebSocket, printWebSocket } from './explain-websocket.ts';
import { covers } from '../rules/guards.ts';
import type { Region } from '../region.ts';
import { IDENTITIES, identityOf, identityPresent, ipIdentity, presenceOf, type Headers } from '../rules/identity.ts';
import { loadRuleFile, regionRuleFile } from '../rules/load.ts';
import { deploymentPath } from '../routing/router.ts';
import { InvalidPathError, normalizePath } from '../rules/normalize-path.ts';
import { requestTarget } from '../edge/request-target.ts';
import type { EdgeSettings } from '../settings/edge.ts';
import type { Output } from '../process/output.ts';
import { withPlan } from '../edge/org-plans.ts';
import type { OrgOverrides } from '../limiter/overrides.ts';
import type { Alternative, Guard, Limit, Rule } from '../rules/types.ts';

export interface ExplainRequest {
  readonly method: string;
  readonly target: string;
  readonly headers: Headers;
  readonly ip: string;
  readonly region: Region;
  readonly json: boolean;
  /** `--websocket`: the request is an upgrade; say how the socket and the commands inside it are counted. */
  readonly websocket?: boolean;
  /** `--org`: the organisation whose plan (its overrides, from the store) applies, and that plan. */
  readonly org?: { readonly name: string; readonly plan: OrgOverrides };
}

/**
 * `gateway explain METHOD PATH`: which rule decides, every rule passed over
 * and why, the buckets that apply and the store key each would use (the
 * identity digested, never the raw value); in-flight limits show their slots and when a slot is given back.
 */
export function explain(req: ExplainRequest, settings: EdgeSettings, out: Output): number {
  const file = regionRuleFile(settings.rulesDir, req.region);
  const { rules, guards } = loadRuleFile(file);
  const normalized = edgePath(req.target, settings);
  // A deployment's path is matched as the deployment sees it (the edge strips `/deployments/{id}` the same way).
  const deployment = deploymentPath(normalized);
  const path = deployment?.path ?? normalized;
  // Counted as the edge counts it: IPv6 by its prefix (IPV6_PREFIX).
  const request = { method: req.method, path, headers: req.headers, ip: ipIdentity(req.ip, settings.ipv6PrefixBits) };
  const matcher = compile(rules, guards);
  const plain = matcher.match(request);
  const plan = req.org?.plan;
  const match = plain !== null && plan !== undefined ? withPlan(plain, plan) : plain;
  const planned = (l: Limit) => plain !== null && !plain.limits.includes(l);
  const websocket = req.websocket ? explainWebSocket(request, matcher, settings, req.region) : null;
  const steps = explainMatch(rules, req.method, path, req.headers);
  const scheme = { prefix: settings.keyPrefix, region: req.region, secret: settings.identitySecret };
  const bucket = (l: Limit) => ({
    policy: l.policy,
    by: l.by,
    ...amountOf(l),
    category: l.category,
    key: bucketKey(scheme, l.scope, l.by, identityOf(request, l.by)),
    ...(planned(l) && { plan: req.org!.name }),
  });
  const limits = (match?.limits ?? []).filter((l) => l.guard === null).map(bucket);
  const applied = (match?.limits ?? []).filter((l) => l.guard !== null).map((l) => ({ guard: l.guard, ...bucket(l) }));
  const passedOver = steps
    .filter((s) => !s.decides)
    .map((s) => ({ rule: s.rule.id, line: s.rule.source.line, reason: s.reason }));

  if (req.json) {
    out.log(
      JSON.stringify({
        method: req.method,
        path: req.target,
        normalized_path: path,
        ...(deployment && { deployment: deployment.deploymentId }),
        region: req.region,
        file,
        rule: match?.rule.id ?? null,
        line: match?.rule.source.line ?? null,
        shadow: match?.rule.shadow ?? false,
        limits,
        guards: applied,
        passed_over: passedOver,
        ...(websocket && { websocket }),
      }),
    );
    return 0;
  }

  out.log(`${req.method} ${path}${path !== req.target ? `   (normalised from ${req.target})` : ''}`);
  if (deployment)
    out.log(`deployment ${deployment.deploymentId}: matched as the deployment sees it (${deployment.prefix} stripped)`);
  out.log(`region ${req.region}, rules ${file}, client ip ${req.ip}`);
  if (req.org !== undefined) {
    const n = Object.keys(req.org.plan).length;
    out.log(
      `organisation ${req.org.name}: ${n} override(s) in the store${n > 0 ? `: ${Object.keys(req.org.plan).join(', ')}` : ''}`,
    );
  }
  out.log('');
  for (const s of passedOver) out.log(`  pass  ${s.rule} (line ${s.line}): ${s.reason}`);
  const decided = steps.find((s) => s.decides);
  if (!match || !decided) {
    out.log('\nNo rule decides: no limit applies to this request.');
    if (websocket) printWebSocket(websocket, out);
    return 0;
  }
  out.log(
    `  ==>   ${match.rule.id} (line ${match.rule.source.line}): ${decided.reason}${match.rule.shadow ? ' [shadow: counts, never denies]' : ''}`,
  );
  out.log('');
  out.log('Buckets (a request passes only if every one has a token; a denied request takes none):');
  for (const l of limits) {
    out.log(`  ${l.policy}: ${amountText(l)}, by ${l.by}, category "${l.category}"${planOf(l)}`);
    out.log(`      key ${l.key}`);
  }
  const absent = match.rule.limits.filter((l) => !match.limits.some((m) => m.policy === l.policy));
  // Only a kind with a header can be absent (the others are always present).
  for (const l of absent)
    out.log(`  (${l.policy} does not apply: the request carries no ${IDENTITIES[l.by].header ?? l.by})`);
  explainGuards(guards, match.rule, applied, req.headers, out);
  if (websocket) printWebSocket(websocket, out);
  return 0;
}

/** The guards of the file: those that apply (with their keys), and why the others do not. */
function explainGuards(
  guards: readonly Guard[],
  rule: Rule,
  applied: readonly (Explained & { guard: string | null })[],
  headers: Headers,
  out: Output,
): void {
  if (guards.length === 0) return;
  out.log('');
  out.log('Guards (taken from in the same all-or-nothing call as the buckets above):');
  for (const g of applied) {
    out.log(`  ${g.policy}: ${amountText(g)}, by ${g.by}, category "${g.category}"${planOf(g)}`);
    out.log(`      key ${g.key}`);
  }
  for (const g of guards) {
    if (applied.some((a) => a.guard === g.id)) continue;
    const why = !covers(g, rule)
      ? `it covers only ${g.rules!.join(', ')}`
      : !identityPresent(g.limit.by, presenceOf(headers))
        ? `the request carries no ${IDENTITIES[g.limit.by].header ?? g.limit.by}`
        : `the request fits none of its own match: ${describeAlternatives(g.alternatives ?? [])}`;
    out.log(`  (${g.limit.policy} does not apply: ${why})`);
  }
}

/** One bucket as explain shows it. */
interface Explained extends Amount {
  readonly policy: string;
  readonly by: string;
  readonly category: string;
  readonly key: string;
  /** The organisation whose override set these numbers (`--org`). */
  readonly plan?: string;
}

function planOf(l: Explained): string {
  return l.plan === undefined ? '' : `  [plan of organisation "${l.plan}"]`;
}

function describeAlternatives(alternatives: readonly Alternative[]): string {
  return alternatives
    .map(
      (a) =>
        `${a.methods ? a.methods.join('|') : 'any method'} ${a.path ? `${a.path.kind} ${a.path.value}` : 'any path'}`,
    )
    .join('; ');
}

/** The path the edge matches and forwards (ESCAPED_SLASHES applied); a target it refuses says so. */
function edgePath(target: string, settings: EdgeSettings): string {
  try {
    return normalizePath(requestTarget(target), settings.escapedSlashes);
  } catch (err) {
    if (err instanceof InvalidPathError)
      throw new InvalidPathError(`the edge answers 400 invalid_path: ${err.message}`);
    throw err;
  }
}
