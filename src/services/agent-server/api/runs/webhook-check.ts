import type { ServerContext } from '../../context.ts';
import { invalid } from '../../errors.ts';

/**
 * A run's (or a cron's) `webhook`, checked as it is created: 422 naming `webhook` and why (not http(s), credentials in
 * it, a host that does not resolve or is loopback, private or reserved without WEBHOOK_HOSTS_ALLOWED naming it).
 */
export async function checkWebhook(ctx: ServerContext, webhook: string | null | undefined): Promise<void> {
  if (webhook == null || webhook === '') return;
  const refused = await ctx.webhooks.check(webhook);
  if (refused !== null) throw invalid({ loc: ['body', 'webhook'], msg: refused, type: 'value_error' });
}
