import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { compose, gatewayContainer, kitFiles, manifest, read, ROOT, yamlDocuments } from './kit.ts';
import { find, gatewayDeployment, render } from './kustomize-render.ts';

/** The operations kit's files parse, and say what they must (issue 28, item 8). */
describe('operations kit: files', () => {
  it.each(kitFiles())('%s parses', (file) => {
    if (file.endsWith('.json')) expect(() => JSON.parse(read(file)) as unknown).not.toThrow();
    else if (/\.ya?ml$/.test(file)) expect(yamlDocuments(file).length).toBeGreaterThan(0);
    else throw new Error(`${file}: a kit file is YAML or JSON`);
  });

  it('the ConfigMap holds the rule files exactly (regenerate it as its header says when this fails)', () => {
    const data = manifest('base/rules-configmap.yaml').data as Record<string, string>;
    expect(Object.keys(data).sort()).toEqual(['eu.yaml', 'us.yaml']);
    for (const [name, text] of Object.entries(data)) expect(text, name).toBe(read(join('rules', name)));
  });

  it('every kustomization names files that exist, and the example Secret is in none', () => {
    const dirs = kitFiles()
      .filter((f) => f.startsWith('deploy/kubernetes/') && f.endsWith('/kustomization.yaml'))
      .map((f) => dirname(f));
    expect(dirs.length).toBeGreaterThanOrEqual(5); // base, the replicas component, three overlays
    for (const dir of dirs) {
      const k = parse(read(join(dir, 'kustomization.yaml'))) as { resources?: string[]; patches?: { path: string }[] };
      const files = [...(k.resources ?? []), ...(k.patches ?? []).map((p) => p.path)];
      for (const f of files) expect(existsSync(join(ROOT, dir, f)), `${dir}: ${f}`).toBe(true);
      expect(files, dir).not.toContain('secret.example.yaml');
    }
  });

  it('the Deployment: probes on the admin port, rules mounted at RULES_DIR, a grace period above the drain', () => {
    const spec = gatewayDeployment('local-host').spec.template.spec;
    const c = gatewayContainer();
    const env = Object.fromEntries((c.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
    const admin = (c.ports as { name: string; containerPort: number }[]).find((p) => p.name === 'admin');
    expect(admin?.containerPort).toBe(9090);
    expect(env.ADMIN_HOST).toBe('0.0.0.0');
    const preStop = Number((c.lifecycle?.preStop?.exec?.command as string[] | undefined)?.[1] ?? 0);
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(env.DRAIN_SECONDS) + preStop);
    const rules = (c.volumeMounts as { name: string; mountPath: string }[]).find((m) => m.name === 'rules');
    expect(rules?.mountPath).toBe(env.RULES_DIR);
    expect(spec.volumes.find((v: { name: string }) => v.name === 'rules').configMap.name).toBe(
      manifest('base/rules-configmap.yaml').metadata.name,
    );
    expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
  });

  it('the Deployment never holds a secret value: the URIs, IDENTITY_SECRET, SECRETS_KEY, ADMIN_TOKEN are Secret refs', () => {
    const env = gatewayContainer().env as { name: string; value?: string; valueFrom?: unknown }[];
    const urls = ['REDIS_URL', 'DATABASE_URI', 'DEPLOYMENTS_DATABASE_URI'];
    for (const name of [...urls, 'IDENTITY_SECRET', 'SECRETS_KEY', 'ADMIN_TOKEN']) {
      const e = env.find((x) => x.name === name);
      expect(e?.valueFrom, name).toMatchObject({ secretKeyRef: { name: 'gateway-secrets', key: name } });
      expect(e?.value, name).toBeUndefined();
    }
    // The example Secret: a Redis with a password, PostgreSQL URLs with a role and a password each.
    const example = manifest('base/secret.example.yaml').stringData as Record<string, string>;
    expect(new URL(example.REDIS_URL!).password).not.toBe('');
    for (const name of urls.slice(1)) {
      const url = new URL(example[name]!);
      expect(url.protocol, name).toBe('postgresql:');
      expect(url.username && url.password, name).toBeTruthy();
    }
  });

  it('the Service, PodDisruptionBudget and HorizontalPodAutoscaler select and scale the Deployment', () => {
    const deployment = gatewayDeployment('kubernetes-host');
    const objects = render('kubernetes-host');
    const labels = deployment.spec.selector.matchLabels as Record<string, string>;
    expect(deployment.spec.template.metadata.labels).toMatchObject(labels);
    expect(find(objects, 'Service', 'agent-gateway')?.spec.selector).toEqual(labels);
    expect(find(objects, 'PodDisruptionBudget')?.spec.selector.matchLabels).toEqual(labels);
    const hpa = find(objects, 'HorizontalPodAutoscaler')?.spec;
    expect(hpa.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: deployment.metadata.name });
    expect(hpa.minReplicas).toBeLessThanOrEqual(hpa.maxReplicas);
  });

  it('compose: the gateway from the Dockerfile with PostgreSQL and Redis 7, all health-checked, on named volumes', () => {
    const c = compose();
    const gateway = c.services.gateway;
    expect(gateway.build).toBe('.');
    expect(c.services.redis.image).toBe('redis:7');
    // Redis with a password (from .env), which the health check and REDIS_URL carry.
    expect(c.services.redis.command.join(' ')).toContain('--requirepass "$$REDIS_PASSWORD"');
    expect(c.services.redis.environment.REDIS_PASSWORD).toMatch(/^\$\{REDIS_PASSWORD:\?/);
    expect(c.services.redis.healthcheck.test.join(' ')).toMatch(/REDISCLI_AUTH=.*redis-cli ping/);
    expect(gateway.environment.REDIS_URL).toMatch(/^redis:\/\/:\$\{REDIS_PASSWORD:\?[^}]*\}@redis:6379$/);
    // PostgreSQL 15 or later, scram for every connection, its data on a volume, health-checked.
    const postgres = c.services.postgres;
    expect(Number(/^postgres:(\d+)/.exec(postgres.image as string)?.[1])).toBeGreaterThanOrEqual(15);
    expect(postgres.environment.POSTGRES_INITDB_ARGS).toContain('--auth-local=scram-sha-256');
    expect(postgres.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(postgres.healthcheck.test[1]).toBe('pg_isready');
    expect(postgres.ports).toBeUndefined();
    // The bundled Agent Server's database and the deployments' server, both that PostgreSQL.
    const user = postgres.environment.POSTGRES_USER as string;
    expect(gateway.environment.DATABASE_URI).toMatch(
      new RegExp(
        `^postgresql://${user}:\\$\\{POSTGRES_PASSWORD:\\?[^}]*\\}@postgres:5432/${postgres.environment.POSTGRES_DB}$`,
      ),
    );
    expect(gateway.environment.DEPLOYMENTS_DATABASE_URI).toMatch(new RegExp(`^postgresql://${user}:.*@postgres:5432/`));
    expect(Object.keys(c.volumes)).toEqual(expect.arrayContaining(['postgres-data', 'redis-data']));
    for (const s of ['postgres', 'redis']) expect(gateway.depends_on[s].condition, s).toBe('service_healthy');
    expect(gateway.healthcheck.test.join(' ')).toContain('/healthz');
    // The volume is mounted where the image keeps its builds.
    const workDir = /^ENV BUILD_WORK_DIR=(\S+)$/m.exec(read('Dockerfile'))?.[1];
    expect(workDir).toBeDefined();
    expect(gateway.volumes).toContain(`builds:${workDir}`);
    expect(gateway.environment.BUILD_WORK_DIR).toBe(workDir);
    expect(Object.keys(c.volumes)).toContain('builds');
    expect(gateway.ports.map((p: string) => p.split(':').at(-1))).toEqual(['8080', '9090']);
    // Docker's SIGKILL comes after the drain.
    expect(Number.parseInt(gateway.stop_grace_period as string)).toBeGreaterThan(
      Number(gateway.environment.DRAIN_SECONDS),
    );
  });
});
