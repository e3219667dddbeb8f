import { expect } from 'vitest';
import type { TestGateway } from '../../helpers/gateway.ts';
import type { Answer, TestControlPlane } from './helpers.ts';

/**
 * What the control plane's error tests share (errors-*.test.ts): every error
 * body is JSON, never a stack; and the four ways to reach the API.
 */

/** A JSON error answer with this status; its text shows no stack or source path. */
export function expectError(res: Answer, status: number, detail?: unknown): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.text).not.toMatch(/\bat .*\(|\.ts:\d+|node_modules|Error:/);
  if (detail !== undefined) expect(res.json).toEqual({ detail });
  else expect(res.json).toHaveProperty('detail');
}

/** Both path forms, on the service and through the edge (read once the hooks have started both). */
export function errorTargets(svc: () => TestControlPlane, gw: () => TestGateway) {
  return [
    { via: 'service', prefix: '/v2', base: () => svc().url },
    { via: 'service', prefix: '/api-host/v2', base: () => svc().url },
    { via: 'edge', prefix: '/v2', base: () => gw().url },
    { via: 'edge', prefix: '/api-host/v2', base: () => gw().url },
  ] as const;
}
