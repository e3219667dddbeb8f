import { z } from 'zod';
import { parseDuration } from './duration.ts';
import { IDENTITY_KINDS } from './identity.ts';
import { METHODS } from './types.ts';

/**
 * The shape of a rule file as written. What a shape cannot say (unique rule
 * ids, at most one limit per identity, one path condition per alternative,
 * alternatives whose methods can match, path conditions that are valid) is
 * checked by `parseRuleFile` (parse.ts), which reports it by line.
 */

const RULE_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

const method = z.enum(METHODS);
const methods = z.union([method, z.array(method).min(1)]);

const pathFields = {
  path: z.string().optional(),
  prefix: z.string().optional(),
  contains: z.string().optional(),
  glob: z.string().optional(),
  template: z.string().optional(),
};

export const alternativeSchema = z.strictObject({ method: methods.optional(), ...pathFields });

export const matchSchema = z.strictObject({
  method: methods.optional(),
  ...pathFields,
  any: z.array(alternativeSchema).min(1).optional(),
});

/**
 * A limit is a rate (`count` per `per`) or in flight (`concurrent`, held `until` the response or the run ends). Which
 * fields go together is checked by `limitKind` (limit-kind.ts), so a mix-up is one clear line rather than a union's
 * list of alternatives.
 */
export const limitSchema = z.strictObject({
  // Exactly the kinds of the identity table.
  by: z.enum(IDENTITY_KINDS),
  count: z.number().int().min(1).max(1_000_000_000).optional(),
  per: z
    .string()
    .refine((s) => parseDuration(s) !== null, {
      message: 'bad duration: expected a whole number of s, m, h or d, such as 10s or 1h',
    })
    .optional(),
  concurrent: z.number().int().min(1).max(1_000_000).optional(),
  until: z.enum(['response', 'run']).optional(),
  category: z.string().min(1),
});

const id = z.string().regex(RULE_ID, {
  message: 'bad id: use lower-case letters, digits and "-" (at most 63), starting with a letter or digit',
});

export const ruleSchema = z.strictObject({
  id,
  match: matchSchema.optional(),
  limits: z.array(limitSchema).min(1, { message: 'a rule needs at least one limit' }),
  shadow: z.boolean().optional(),
  fail: z.enum(['open', 'closed']).optional(),
});

export const ruleListSchema = z.array(ruleSchema).min(1, { message: 'the file has no rules' });

/**
 * A guard: one limit (as a rule's) with an id, optionally only for some rules (by id) and only for the requests its
 * own `match` fits (whatever rule decides them).
 */
export const guardSchema = z.strictObject({
  id,
  ...limitSchema.shape,
  match: matchSchema.optional(),
  rules: z.array(z.string()).min(1).optional(),
});

export const guardListSchema = z.array(guardSchema);

/** The keys of a rule file written as a mapping (`guards:` and `rules:`) rather than a bare list of rules. */
export const FILE_KEYS = ['guards', 'rules'] as const;

export type RawAlternative = z.infer<typeof alternativeSchema>;
export type RawMatch = z.infer<typeof matchSchema>;
export type RawRule = z.infer<typeof ruleSchema>;
export type RawGuard = z.infer<typeof guardSchema>;
export type RawLimit = z.infer<typeof limitSchema>;
export const PATH_FIELDS = Object.keys(pathFields) as (keyof typeof pathFields)[];
