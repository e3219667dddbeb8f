import { describe, expect, it } from 'vitest';
import { loadEdgeSettings } from '../../src/settings/edge.ts';
import { SettingsError } from '../../src/settings/env.ts';
import { loadSettings } from '../../src/settings/settings.ts';
import { refuseHostProxies } from '../../src/settings/host-proxies.ts';
import { trustedProxies } from '../../src/edge/client-ip.ts';

describe('loadSettings: the one loader of `gateway start`', () => {
  it("holds the bundled services' settings, read from the same environment", () => {
    const s = loadSettings({
      REGION: 'eu',
      BUILD_CONCURRENCY: '5',
      APP_CONFIG: 'app/langgraph.json',
      KEYS_PREFIX: 'k1',
    });
    expect(s.region).toBe('eu');
    expect(s.bundled.controlPlane).toMatchObject({ region: 'eu', buildConcurrency: 5 });
    expect(s.bundled.agentServer).toMatchObject({ appConfig: 'app/langgraph.json' });
    expect(s.bundled.keys).toEqual({
      redisUrl: null,
      prefix: 'k1',
      warning: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead',
    });
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.bundled)).toBe(true);
  });

  it("fails at load on a bundled service's invalid variable, naming it", () => {
    expect(() => loadSettings({ BUILD_CONCURRENCY: 'lots' })).toThrow(/^BUILD_CONCURRENCY: /);
    expect(() => loadSettings({ AGENT_SERVER_API_KEYS: 'short' })).toThrow(/^AGENT_SERVER_API_KEYS: /);
  });

  it('reads no settings of a service that runs elsewhere: its variables cannot stop this gateway', () => {
    const external = { CONTROL_PLANE_URL: 'http://cp:8081', AGENT_SERVER_URL: 'http://as:8123' };
    const s = loadSettings({ ...external, BUILD_CONCURRENCY: 'lots', AGENT_SERVER_API_KEYS: 'short' });
    expect(s.bundled).toEqual({ controlPlane: null, agentServer: null, keys: null, keysAdmin: false });
    // KEY_CHECK asks the registry even then: its settings are read.
    const checked = loadSettings({ ...external, KEY_CHECK: 'on', REDIS_URL: 'redis://r:6379' });
    expect(checked.bundled.keys).toMatchObject({ redisUrl: 'redis://r:6379', prefix: 'keys' });
  });
});

describe('TRUST_PROXY and KEY_CHECK are validated at load, like every variable', () => {
  it('TRUST_PROXY never covers this host while the gateway runs deployments here (they connect from it)', () => {
    for (const own of ['127.0.0.1/32', '127.0.0.0/8', '::1', '0.0.0.0/0'])
      expect(() => loadSettings({ TRUST_PROXY: own }), own).toThrow(
        /^TRUST_PROXY: it covers .*an address of this host/,
      );
    expect(() => refuseHostProxies(trustedProxies(['10.9.0.0/16']), ['10.9.8.7'])).toThrow(/10\.9\.8\.7/);
    expect(loadSettings({ TRUST_PROXY: '192.0.2.10' }).trustProxy.isTrusted('192.0.2.10')).toBe(true);
    // With the control plane elsewhere, no deployment runs here: a proxy on this host may be trusted.
    expect(
      loadSettings({ TRUST_PROXY: '127.0.0.1', CONTROL_PLANE_URL: 'http://cp:1' }).trustProxy.isTrusted('127.0.0.1'),
    ).toBe(true);
  });

  it('TRUST_PROXY: an entry that is not an address or CIDR fails naming the variable', () => {
    for (const bad of ['10.0.0.0/33', 'proxy.local', '10.0.0.1, ::1/129']) {
      expect(() => loadEdgeSettings({ TRUST_PROXY: bad }), bad).toThrow(SettingsError);
      expect(() => loadSettings({ TRUST_PROXY: bad }), bad).toThrow(/^TRUST_PROXY: ".*" is not an IP address or CIDR/);
    }
    const trust = loadSettings({ TRUST_PROXY: '10.0.0.0/8, ::1', CONTROL_PLANE_URL: 'http://cp:1' }).trustProxy;
    expect([trust.isTrusted('10.1.2.3'), trust.isTrusted('::1'), trust.isTrusted('11.0.0.1')]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('KEY_CHECK: decided at load (on with the bundled services, off in front of external ones)', () => {
    expect(loadSettings({}).keyCheck).toBe(true);
    expect(loadSettings({ KEY_CHECK: 'off' }).keyCheck).toBe(false);
    const external = { CONTROL_PLANE_URL: 'http://cp:8081', AGENT_SERVER_URL: 'http://as:8123' };
    expect(loadSettings(external).keyCheck).toBe(false);
    expect(loadSettings({ ...external, KEY_CHECK: 'on', REDIS_URL: 'redis://r:6379' }).keyCheck).toBe(true);
  });

  it('KEY_CHECK: an invalid value, or on with an external control plane and no REDIS_URL, fails naming it', () => {
    expect(() => loadSettings({ KEY_CHECK: 'maybe' })).toThrow(/^KEY_CHECK: must be one of on, off/);
    expect(() => loadSettings({ KEY_CHECK: 'on', CONTROL_PLANE_URL: 'http://cp:8081' })).toThrow(
      'KEY_CHECK: on with CONTROL_PLANE_URL needs REDIS_URL, where the platform keeps its key registry',
    );
  });
});

// Issue 35, item 8: a wrong RULES_DIR (or a region without its file) printed a JSON stack and exited 70.
describe("RULES_DIR holds the region's rule file", () => {
  it('a folder without it fails at load in one line naming the variable, the region and the path', () => {
    expect(() => loadEdgeSettings({ RULES_DIR: '/nonexistent-rules' })).toThrow(
      'RULES_DIR: must be a folder holding us.yaml for REGION=us: /nonexistent-rules/us.yaml does not exist',
    );
    expect(() => loadEdgeSettings({ RULES_DIR: 'rules', REGION: 'eu' })).not.toThrow();
  });
});
