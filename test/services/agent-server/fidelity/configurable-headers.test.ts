import { describe, expect, it } from 'vitest';
import {
  configurableHeaderFilter,
  configurableHeaders,
} from '../../../../src/services/agent-server/api/runs/configurable-headers.ts';

/** Which request headers reach a run's `config.configurable` (the whole path is tested in app-fidelity.test.ts). */
describe('configurable headers', () => {
  const request = new Headers({
    'x-user-id': 'u1',
    'X-Org': 'acme',
    'user-agent': 'ua/1',
    'x-api-key': 'secret',
    'x-tenant-id': 't',
    'x-service-key': 's',
    authorization: 'Bearer t',
    cookie: 'c=1',
    'x-forwarded-for': '203.0.113.9',
    'x-real-ip': '203.0.113.9',
    'x-request-id': 'r1',
    accept: 'application/json',
  });

  it('copies x-* and user-agent, never credentials, and leaves out the client address by default', () => {
    expect(configurableHeaders(request, configurableHeaderFilter(null))).toEqual({
      'x-user-id': 'u1',
      'x-org': 'acme',
      'user-agent': 'ua/1',
      'x-request-id': 'r1',
    });
  });

  it('follows include and exclude patterns, and still never copies credentials', () => {
    const filter = configurableHeaderFilter({ include: ['x-*', 'authorization', 'accept'], exclude: ['x-org'] });
    expect(configurableHeaders(request, filter)).toEqual({
      'x-user-id': 'u1',
      'x-forwarded-for': '203.0.113.9',
      'x-real-ip': '203.0.113.9',
      'x-request-id': 'r1',
      accept: 'application/json',
    });
  });
});
