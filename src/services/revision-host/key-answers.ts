import { memoKey } from '../../memo/memo-key.ts';
import { RecentlyUsed } from '../../memo/recently-used.ts';
import type { ApiKeyVerifier } from '../agent-server/auth/authenticate.ts';

/**
 * A revision's key checks, asked of the host over the control channel (the
 * process has no registry of its own) and remembered briefly, so a hot key
 * costs one Map lookup rather than a round trip through the gateway per
 * request. Answers expire (a known key after `knownForMs`, an unknown one
 * after `unknownForMs`) so the registry stays the authority; concurrent checks
 * of one key share one question; a question that fails or times out is not
 * remembered (the request is refused, the next asks again). Bounded: two
 * generations of `size` entries, each key stored as at most 128 characters.
 */
export interface KeyAnswersOptions {
  readonly size?: number;
  readonly knownForMs?: number;
  readonly unknownForMs?: number;
  readonly now?: () => number;
}

interface Answer {
  readonly org: string | null;
  readonly until: number;
}

export function rememberedKeyAnswers(
  ask: (key: string) => Promise<string | null>,
  { size = 10_000, knownForMs = 30_000, unknownForMs = 5_000, now = Date.now }: KeyAnswersOptions = {},
): ApiKeyVerifier {
  const answers = new RecentlyUsed<string, Answer>(size);
  const asking = new Map<string, Promise<string | null>>();
  return async (key) => {
    const memo = memoKey(key);
    const known = answers.get(memo);
    if (known !== undefined && known.until > now()) return known.org === null ? null : { org: known.org };
    let question = asking.get(memo);
    if (question === undefined) {
      question = ask(key).then((org) => {
        answers.set(memo, { org, until: now() + (org === null ? unknownForMs : knownForMs) });
        return org;
      });
      asking.set(memo, question);
      void question.then(
        () => asking.delete(memo),
        () => asking.delete(memo),
      );
    }
    const org = await question.catch(() => null);
    return org === null ? null : { org };
  };
}
