import { describe, expect, it } from 'vitest';
import { deploymentUrl } from '../../src/routing/deployment-url.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { SettingsError } from '../../src/settings/env.ts';

const refused = (env: Record<string, string>, variable: string) => {
  expect(() => loadSettings(env)).toThrow(SettingsError);
  expect(() => loadSettings(env)).toThrow(variable);
};

describe('deployment addressing settings', () => {
  it('unset: no PUBLIC_URL (the edge says its own address once listening), no domain, routes under "routes"', () => {
    const s = loadSettings({});
    expect(s.publicUrl).toBeNull();
    expect(s.deploymentsDomain).toBeNull();
    expect(s.routesPrefix).toBe('routes');
  });

  it('PUBLIC_URL: http(s), trailing slashes dropped, a path kept; the path-form url is built on it', () => {
    const s = loadSettings({ PUBLIC_URL: 'https://gw.example.com/edge/' });
    expect(s.publicUrl).toBe('https://gw.example.com/edge');
    expect(deploymentUrl('d-1', { publicUrl: s.publicUrl!, domain: null })).toBe(
      'https://gw.example.com/edge/deployments/d-1',
    );
    refused({ PUBLIC_URL: 'ftp://gw.example.com' }, 'PUBLIC_URL');
    refused({ PUBLIC_URL: 'not a url' }, 'PUBLIC_URL');
    refused({ PUBLIC_URL: 'https://gw.example.com/?a=1' }, 'PUBLIC_URL');
    refused({ PUBLIC_URL: 'https://user:secret@gw.example.com' }, 'PUBLIC_URL');
  });

  it('DEPLOYMENTS_DOMAIN: a DNS name, lowercased, a leading dot dropped; the host-form url is built on it', () => {
    expect(loadSettings({ DEPLOYMENTS_DOMAIN: 'Deploy.Example.COM' }).deploymentsDomain).toBe('deploy.example.com');
    expect(loadSettings({ DEPLOYMENTS_DOMAIN: '.localhost' }).deploymentsDomain).toBe('localhost');
    expect(deploymentUrl('d-1', { publicUrl: 'http://x', domain: 'deploy.example.com' })).toBe(
      'https://d-1.deploy.example.com',
    );
    for (const bad of ['https://deploy.example.com', 'deploy.example.com:8080', 'a..b', '-a.b', 'a_b.c', '*.a.b'])
      refused({ DEPLOYMENTS_DOMAIN: bad }, 'DEPLOYMENTS_DOMAIN');
  });

  it('ROUTES_PREFIX: letters, digits, "_", ".", ":", "-"', () => {
    expect(loadSettings({ ROUTES_PREFIX: 'platform:routes' }).routesPrefix).toBe('platform:routes');
    refused({ ROUTES_PREFIX: 'a b' }, 'ROUTES_PREFIX');
    refused({ ROUTES_PREFIX: 'a{b}' }, 'ROUTES_PREFIX');
  });
});
