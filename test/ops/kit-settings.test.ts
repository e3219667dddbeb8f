import { describe, expect, it } from 'vitest';
import { composeEnv, composeSecretNames, deploymentEnv, knownVariables, manifest, OVERLAYS } from './kit.ts';

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

  it.each(OVERLAYS)(
    "overlay %s: the Deployment's env, literal, from the Secret and from the pod's fields",
    (overlay) => {
      const { values, fromSecret, fromField } = deploymentEnv(overlay);
      const names = [...Object.keys(values), ...fromSecret, ...fromField];
      expect(names.filter((n) => !known.has(n))).toEqual([]);
    },
  );

  it("the example Secret's keys are those the overlays read from it", () => {
    const secretKeys = Object.keys(manifest('base/secret.example.yaml').stringData as Record<string, string>);
    const read = new Set(OVERLAYS.flatMap((o) => deploymentEnv(o).fromSecret));
    expect(secretKeys.sort()).toEqual([...read].sort());
  });
});
