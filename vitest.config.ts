import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Against a real Kubernetes cluster: `npm run test:k8s` (vitest.k8s.config.ts).
    exclude: [...configDefaults.exclude, 'test/k8s/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
