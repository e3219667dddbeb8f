import { describe, expect, it } from 'vitest';
import { rememberedKeyAnswers } from '../../../src/services/revision-host/key-answers.ts';

/** A revision's key checks go to the host; its answers are remembered briefly, failures never. */
describe('rememberedKeyAnswers', () => {
  const setup = (answer: (key: string) => Promise<string | null>) => {
    let t = 0;
    const asked: string[] = [];
    const verify = rememberedKeyAnswers((key) => (asked.push(key), answer(key)), {
      knownForMs: 1000,
      unknownForMs: 100,
      size: 2,
      now: () => t,
    });
    return { verify, asked, advance: (ms: number) => (t += ms) };
  };

  it('asks once for a hot key until its answer expires; concurrent checks share the question', async () => {
    const { verify, asked, advance } = setup(async (k) => (k === 'good' ? 'org-a' : null));
    const all = await Promise.all(Array.from({ length: 50 }, () => verify('good')));
    expect(all.every((o) => o?.org === 'org-a')).toBe(true);
    await verify('good');
    expect(asked).toEqual(['good']);
    expect(await verify('bad')).toBeNull();
    advance(150);
    await verify('bad'); // an unknown key is asked about again sooner
    await verify('good');
    expect(asked).toEqual(['good', 'bad', 'bad']);
    advance(1000);
    await verify('good');
    expect(asked.filter((k) => k === 'good')).toHaveLength(2);
  });

  it('remembers no failure: the request is refused and the next one asks again', async () => {
    let fail = true;
    const { verify, asked } = setup(async () => {
      if (fail) throw new Error('no answer');
      return 'org-a';
    });
    expect(await verify('k')).toBeNull();
    fail = false;
    expect(await verify('k')).toEqual({ org: 'org-a' });
    expect(asked).toEqual(['k', 'k']);
  });

  it('stays bounded: older keys are forgotten and asked again', async () => {
    const { verify, asked } = setup(async () => 'org-a');
    for (const k of ['a', 'b', 'c', 'd', 'e']) await verify(k);
    await verify('a');
    expect(asked).toEqual(['a', 'b', 'c', 'd', 'e', 'a']);
  });
});
