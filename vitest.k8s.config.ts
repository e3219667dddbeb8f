import { defineConfig } from 'vitest/config';

/** The Kubernetes host against a real cluster (KUBECONFIG): `npm run test:k8s`; not part of `npm test`. */
export default defineConfig({
  test: {
    include: ['test/k8s/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
  },
});
