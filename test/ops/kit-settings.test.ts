import { describe, expect, it } from 'vitest';
import { composeEnv, composeSecretNames, deploymentEnv, knownVariables, manifest } from './kit.ts';

/** The kit sets only variables the gateway reads: a misspelt name would be ignored without a word. */
describe('operations kit: settings', () => {
  const known = knownVariables();

  it('the list of known variables is read from the settings loaders', () => {
    for (const name of ['PORT', 'REDIS_URL', 'IDENTITY_SECRET', 'SECRETS_KEY', 'BUILD_WORK_DIR', 'LOG_FORMAT'])
      expect(known, name).toContain(name);
  });

  it("compose.yaml's environment and its gateway.env keys", () => {
    const names = [...Object.keys(composeEnv()), ...composeSecretNames()];
    expect(composeSecretNames()).toEqual(['IDENTITY_SECRET', 'SECRETS_KEY', 'ADMIN_TOKEN']);
    expect(names.filter((n) => !known.has(n))).toEqual([]);
  });

  it("the Deployment's env, literal and from the Secret, and the example Secret's keys", () => {
    const { values, fromSecret } = deploymentEnv();
    const secretKeys = Object.keys(manifest('secret.example.yaml').stringData as Record<string, string>);
    expect(secretKeys.sort()).toEqual([...fromSecret].sort());
    expect([...Object.keys(values), ...fromSecret].filter((n) => !known.has(n))).toEqual([]);
  });
});
