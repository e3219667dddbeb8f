import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { describeDevelopmentKey } from '../../../src/keys/bootstrap.ts';
import { BuildQueue } from '../../../src/services/control-plane/build-queue.ts';
import {
  canMove,
  IllegalTransition,
  isFailed,
  isTerminal,
  moveRevision,
  PIPELINE,
  supersededStatus,
} from '../../../src/services/control-plane/revision-state.ts';
import { SecretBox, SecretError } from '../../../src/services/control-plane/secrets.ts';
import { loadControlPlaneSettings } from '../../../src/services/control-plane/settings.ts';
import { REVISION_STATUSES } from '../../../src/services/control-plane/types.ts';
import { SettingsError } from '../../../src/settings/env.ts';
import { deleteByPrefix } from '../../helpers/redis-keys.ts';
import { client, imageBody, startControlPlane } from './helpers.ts';
import { deploymentRecord, revisionRecord } from './store-contract.ts';

describe('control plane settings', () => {
  it('has documented defaults', () => {
    const s = loadControlPlaneSettings({});
    expect(s).toMatchObject({
      region: 'us',
      redisUrl: null,
      storePrefix: 'cp',
      keysPrefix: 'keys',
      secretsKey: null,
      buildDelayMs: 0,
      buildConcurrency: 2,
      gitTimeoutMs: 60_000,
      development: true,
      localRepos: true,
    });
    expect(
      loadControlPlaneSettings({
        BUILD_DELAY_SECONDS: '180',
        SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'),
        NODE_ENV: 'production',
      }),
    ).toMatchObject({
      buildDelayMs: 180_000,
      secretsKey: Buffer.alloc(32, 1),
      development: false,
      localRepos: false,
    });
    expect(loadControlPlaneSettings({ NODE_ENV: 'production', LOCAL_REPOS: 'allow' }).localRepos).toBe(true);
    expect(loadControlPlaneSettings({ LOCAL_REPOS: 'deny' }).localRepos).toBe(false);
  });

  it('reads the key registry prefix from API_KEYS_PREFIX; the old KEYS_PREFIX still works, with a warning', () => {
    expect(loadControlPlaneSettings({ API_KEYS_PREFIX: 'new-keys' })).toMatchObject({
      keysPrefix: 'new-keys',
      keysPrefixWarning: null,
    });
    expect(loadControlPlaneSettings({ KEYS_PREFIX: 'old-keys' })).toMatchObject({
      keysPrefix: 'old-keys',
      keysPrefixWarning: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead',
    });
    expect(loadControlPlaneSettings({ API_KEYS_PREFIX: 'new-keys', KEYS_PREFIX: 'old-keys' })).toMatchObject({
      keysPrefix: 'new-keys',
      keysPrefixWarning: 'KEYS_PREFIX is deprecated and ignored (API_KEYS_PREFIX is set): remove it',
    });
    expect(() => loadControlPlaneSettings({ API_KEYS_PREFIX: 'a b' })).toThrow(/^API_KEYS_PREFIX: must be 1-128/);
    expect(() => loadControlPlaneSettings({ KEYS_PREFIX: 'a b' })).toThrow(/^KEYS_PREFIX: must be 1-128/);
  });

  it('logs the KEYS_PREFIX deprecation once at start, naming the variable to use', async () => {
    const cp = await startControlPlane({ KEYS_PREFIX: 'old-keys' });
    try {
      const line = await cp.logs.waitFor((l) => typeof l.msg === 'string' && l.msg.includes('KEYS_PREFIX'));
      expect(line).toMatchObject({ level: 40, msg: 'KEYS_PREFIX is deprecated: use API_KEYS_PREFIX instead' });
      expect(cp.logs.lines().filter((l) => String(l.msg).includes('KEYS_PREFIX'))).toHaveLength(1);
    } finally {
      await cp.close();
    }
    const quiet = await startControlPlane({ API_KEYS_PREFIX: 'new-keys' });
    await quiet.close();
    expect(quiet.logs.raw()).not.toContain('KEYS_PREFIX');
  });

  it.each([
    ['SECRETS_KEY', 'c2hvcnQ='],
    ['SECRETS_KEY', 'not base64!'],
    ['BUILD_DELAY_SECONDS', '-1'],
    ['LOCAL_REPOS', 'sometimes'],
    ['BUILD_DELAY_SECONDS', 'soon'],
    ['BUILD_CONCURRENCY', '0'],
    ['REGION', 'mars'],
    ['REDIS_URL', 'http://localhost'],
    ['CONTROL_PLANE_PREFIX', 'has space'],
    ['DEPLOYMENT_URL', 'ftp://x'],
  ])('fails naming %s for %j', (variable, value) => {
    const err = (() => {
      try {
        loadControlPlaneSettings({ [variable]: value });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SettingsError);
    expect((err as SettingsError).variable).toBe(variable);
    expect((err as Error).message.startsWith(`${variable}: `)).toBe(true);
  });
});

describe('SecretBox (AES-256-GCM)', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, for the same owner only; every seal differs', () => {
    const a = box.seal('hunter2', 'dep-1:PASSWORD');
    expect(box.open(a, 'dep-1:PASSWORD')).toBe('hunter2');
    expect(a).not.toContain('hunter2');
    expect(box.seal('hunter2', 'dep-1:PASSWORD')).not.toBe(a);
    expect(() => box.open(a, 'dep-2:PASSWORD')).toThrow(SecretError);
    expect(box.open(box.seal('', 'o'), 'o')).toBe('');
  });

  it('refuses an altered value and names a wrong key', () => {
    const sealed = box.seal('value', 'o');
    const parts = sealed.split('.');
    const body = Buffer.from(parts[4]!, 'base64url');
    body[0]! ^= 1;
    parts[4] = body.toString('base64url');
    expect(() => box.open(parts.join('.'), 'o')).toThrow(/altered/);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'o')).toThrow(/another key .*SECRETS_KEY/);
    expect(() => box.open('plain text', 'o')).toThrow(/not a sealed secret/);
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow(/32-byte/);
  });
});

describe('revision state machine', () => {
  const at = new Date('2026-01-01T00:00:00Z');

  it('the happy path moves one step at a time, each recorded with its time', () => {
    let r = revisionRecord(deploymentRecord(), 1);
    for (const [i, to] of PIPELINE.slice(1).entries()) {
      r = moveRevision(r, to, new Date(at.getTime() + i * 1000));
      expect(r.status).toBe(to);
      expect(r.updated_at).toBe(new Date(at.getTime() + i * 1000).toISOString());
    }
    expect(r.status_history.map((h) => h.status)).toEqual(PIPELINE);
    expect(() => moveRevision(revisionRecord(deploymentRecord(), 1), 'DEPLOYED', at)).toThrow(IllegalTransition);
  });

  it('failures belong to their phase; final statuses never move', () => {
    expect(canMove('BUILDING', 'BUILD_FAILED')).toBe(true);
    expect(canMove('BUILDING', 'DEPLOY_FAILED')).toBe(false);
    expect(canMove('DEPLOYING', 'DEPLOY_FAILED')).toBe(true);
    expect(canMove('QUEUED', 'CREATE_FAILED')).toBe(true);
    for (const s of REVISION_STATUSES) {
      if (isTerminal(s)) for (const to of REVISION_STATUSES) expect(canMove(s, to)).toBe(false);
    }
    expect(REVISION_STATUSES.filter(isTerminal)).toEqual([
      'CREATE_FAILED',
      'BUILD_FAILED',
      'DEPLOY_FAILED',
      'DEPLOYED',
      'SKIPPED',
      'INTERRUPTED',
      'UNKNOWN',
    ]);
    expect(REVISION_STATUSES.filter(isFailed)).toEqual(['CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED']);
  });

  it('a superseded revision is SKIPPED before work started, INTERRUPTED after; both moves are legal', () => {
    expect(supersededStatus('QUEUED')).toBe('SKIPPED');
    for (const s of ['AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING'] as const) {
      expect(supersededStatus(s)).toBe('INTERRUPTED');
      expect(canMove(s, 'INTERRUPTED')).toBe(true);
    }
    const stopped = moveRevision(revisionRecord(deploymentRecord(), 1), 'SKIPPED', at, 'SKIPPED: superseded');
    expect(stopped.status_history.at(-1)).toEqual({
      status: 'SKIPPED',
      at: at.toISOString(),
      message: 'SKIPPED: superseded',
    });
  });
});

describe('BuildQueue', () => {
  const gate = () => {
    let open!: () => void;
    const p = new Promise<void>((r) => (open = r));
    return { p, open };
  };

  it('runs at most `concurrency` jobs; the rest wait their turn in order', async () => {
    const q = new BuildQueue(2);
    const order: string[] = [];
    const gates = [gate(), gate(), gate()];
    ['a', 'b', 'c'].forEach((id, i) => q.add(id, 'g', async () => (order.push(id), await gates[i]!.p)));
    expect(q.size).toEqual({ running: 2, waiting: 1 });
    expect(order).toEqual(['a', 'b']);
    gates[0]!.open();
    await new Promise((r) => setTimeout(r, 0));
    expect(order).toEqual(['a', 'b', 'c']);
    gates[1]!.open();
    gates[2]!.open();
    await q.idle();
    expect(q.size).toEqual({ running: 0, waiting: 0 });
  });

  it('cancel drops a waiting job and aborts a running one, waiting for it to stop', async () => {
    const q = new BuildQueue(1);
    let aborted = false;
    let stopped = false;
    q.add('run', 'dep-1', async (signal) => {
      await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      aborted = signal.aborted;
      await new Promise((r) => setTimeout(r, 20));
      stopped = true;
    });
    let ranWaiting = false;
    q.add('wait', 'dep-1', async () => void (ranWaiting = true));
    q.add('other', 'dep-2', async () => {});
    expect(q.runningIn('dep-1')).toBe(1);
    await q.cancelGroup('dep-1');
    expect(aborted && stopped).toBe(true);
    expect(q.has('run')).toBe(false);
    await q.idle();
    expect(ranWaiting).toBe(false);
    expect(q.has('other')).toBe(false);
  });

  it('reports a failing job (not a cancelled one); close refuses new jobs', async () => {
    const errors: string[] = [];
    const q = new BuildQueue(1, (err, id) => errors.push(`${id}: ${(err as Error).message}`));
    q.add('bad', 'g', async () => {
      throw new Error('broken');
    });
    q.add('bad', 'g', async () => {}); // same id while queued: ignored
    await q.idle();
    expect(errors).toEqual(['bad: broken']);
    q.add(
      'long',
      'g',
      (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    await q.close();
    expect(errors).toEqual(['bad: broken']);
    q.add('late', 'g', async () => {});
    expect(q.has('late')).toBe(false);
  });
});

describe('first start in development', () => {
  const RUN = `test:cp-dev:${randomUUID()}`;
  const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
  afterAll(async () => {
    await deleteByPrefix(redis, RUN);
    await redis.quit();
  });

  it('an empty registry gets one development key, returned once and never logged; it works; the next start makes none', async () => {
    const env = {
      REDIS_URL: 'redis://127.0.0.1:6379',
      CONTROL_PLANE_PREFIX: RUN,
      API_KEYS_PREFIX: `${RUN}:keys`,
      NODE_ENV: 'development',
    };
    const first = await startControlPlane(env);
    try {
      const dev = first.cp.devKey!;
      expect(dev).toMatchObject({ org: 'default', workspace: 'default', key: expect.stringMatching(/^gwk_/) });
      expect(describeDevelopmentKey(dev)).toContain(`X-Api-Key: ${dev.key}`);
      expect(describeDevelopmentKey(dev)).toContain('X-Tenant-Id: default');
      await first.logs.waitFor((l) => typeof l.msg === 'string' && l.msg.includes('development API key'));
      expect(first.logs.raw()).not.toContain(dev.key);
      expect((await client(first.url, dev).post('/deployments', imageBody())).status).toBe(201);
    } finally {
      await first.close();
    }
    const second = await startControlPlane(env);
    await second.close();
    expect(second.cp.devKey).toBeNull();
  });

  it('production makes no key; an unset SECRETS_KEY and a key registry in memory (no key can ever exist) are warned about', async () => {
    const prod = await startControlPlane({ NODE_ENV: 'production', SECRETS_KEY: '' });
    try {
      expect(prod.cp.devKey).toBeNull();
      const warning = await prod.logs.waitFor(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('SECRETS_KEY is unset'),
      );
      expect(warning.level).toBe(40);
      const noKeys = await prod.logs.waitFor(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('the key registry is in memory'),
      );
      expect(noKeys).toMatchObject({ level: 40, msg: expect.stringContaining('REDIS_URL') });
    } finally {
      await prod.close();
    }
  });
});

describe('DEPLOYMENT_URL', () => {
  it('gives each deployment its url (`{id}` replaced); unset, url is null', async () => {
    const svc = await startControlPlane({ DEPLOYMENT_URL: 'https://agents.example.com/d/{id}' });
    try {
      const d = (await client(svc.url, await svc.tenant()).post('/deployments', imageBody())).json;
      expect(d.url).toBe(`https://agents.example.com/d/${d.id}`);
    } finally {
      await svc.close();
    }
  });
});
