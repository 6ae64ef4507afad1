// What can be checked of the container set-up without a Docker engine: the files parse, point at
// each other, query only metrics the service exports, and build and start the service as CI does.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BUILT_TREE, PRODUCTION_INSTALL, START, supportedLines } from '../../scripts/node-lines.mjs';
import { parseEnv } from '../../src/config/env.js';
import { ROOT, startTestService, type TestService } from '../support/service.js';

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
// Compose reads YAML merge keys (`<<: *relayer`); the yaml package does so only when asked.
const compose = parse(read('compose.yaml'), { merge: true });
const prometheus = parse(read('deploy/prometheus/prometheus.yml'));
const alerts = parse(read('deploy/prometheus/alerts.yml'));
const dashboard = JSON.parse(read('deploy/grafana/dashboards/relayer.json'));
const datasources = parse(read('deploy/grafana/provisioning/datasources/prometheus.yaml'));
const providers = parse(read('deploy/grafana/provisioning/dashboards/relayer.yaml'));
const relayers = Object.keys(compose.services).filter((name) => name.startsWith('relayer-'));

/** `${VAR:?message}` and `${VAR:-default}` as compose fills them in, from `vars`. */
const interpolate = (value: string, vars: Record<string, string>) =>
  value.replace(/\$\{(\w+)(?::[?-]([^}]*))?\}/g, (_, name: string, fallback = '') => vars[name] ?? fallback);

/** The metric names a PromQL expression reads (not functions, keywords, labels, strings or ranges). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/[a-zA-Z_:][\w:]*(?!\s*\(|[\w:])/g)].map((m) => m[0]).filter((name) => !['and', 'or', 'unless', 'bool', 'offset'].includes(name));
}

/** Dockerfile instructions by stage, continuation lines joined. */
function dockerStages(text: string) {
  const stages: { from: string; steps: { op: string; args: string }[] }[] = [];
  for (const line of text.replace(/\\\n\s*/g, ' ').split('\n')) {
    const m = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
    if (!m || line.trim().startsWith('#')) continue;
    if (m[1] === 'FROM') stages.push({ from: m[2], steps: [] });
    else stages.at(-1)?.steps.push({ op: m[1], args: m[2] });
  }
  return stages;
}

describe('compose.yaml', () => {
  it('runs two relayer instances on one PostgreSQL and one Redis, each with an environment the service accepts', () => {
    expect(relayers).toEqual(['relayer-1', 'relayer-2']);
    for (const name of relayers) {
      const service = compose.services[name];
      const env = Object.fromEntries(
        Object.entries(service.environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v), { API_KEY: 'k'.repeat(32) })]),
      );
      const parsed = parseEnv(env);
      expect(new URL(parsed.databaseUrl!).host).toBe('postgres:5432');
      expect(new URL(parsed.redisUrl!).host).toBe('redis:6379');
      expect(parsed.metrics).toEqual({ enabled: true, port: 8081 });
      expect(parsed.instanceId).toBe(name);
      expect(service.depends_on.postgres.condition).toBe('service_healthy');
    }
    expect(compose.services.postgres.image).toMatch(/^postgres:/);
    expect(compose.services.redis.image).toMatch(/^redis:/);
    // The API key is required: compose refuses to start without one rather than run with none.
    expect(compose.services['relayer-1'].environment.API_KEY).toMatch(/^\$\{API_KEY:\?/);
  });

  it('mounts files that exist, the config where the image reads it', () => {
    const image = dockerStages(read('Dockerfile')).at(-1)!;
    const configPath = /CONFIG_PATH=(\S+)/.exec(
      image.steps
        .filter((s) => s.op === 'ENV')
        .map((s) => s.args)
        .join(' '),
    )![1];
    const mounts = Object.values(compose.services).flatMap((s: any) => (s.volumes ?? []) as string[]);
    for (const mount of mounts.filter((m) => m.startsWith('./'))) expect(existsSync(path.join(ROOT, mount.split(':')[0])), mount).toBe(true);
    expect(mounts).toContain(`./deploy/config.json:${configPath}:ro`);
    // The example config's keystore path is relative to the config's folder, where the keys are mounted.
    const config = JSON.parse(read('deploy/config.json'));
    const keysMount = mounts.find((m) => m.startsWith('./config/keys:'))!.split(':')[1];
    expect(path.posix.join(path.posix.dirname(configPath), config.signers[0].config.path)).toBe(`${keysMount}/devnet.json`);
    expect(config.networks[0].rpc_urls).toEqual(['http://devnet:8545']);
  });

  it('has Prometheus scrape both instances and Grafana read Prometheus and the dashboard', () => {
    expect(prometheus.scrape_configs[0].static_configs[0].targets).toEqual(relayers.map((r) => `${r}:8081`));
    expect(prometheus.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
    expect(compose.services.prometheus.volumes).toContain('./deploy/prometheus:/etc/prometheus:ro');
    expect(datasources.datasources[0]).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
    const dashboards = compose.services.grafana.volumes.find((v: string) => v.startsWith('./deploy/grafana/dashboards:')).split(':')[1];
    expect(providers.providers[0].options.path).toBe(dashboards);
    const used = new Set(dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.datasource.uid)));
    expect([...used]).toEqual([datasources.datasources[0].uid]);
  });
});

describe('metrics the dashboard and alert rules query', () => {
  let service: TestService;
  let exported: Set<string>;

  beforeAll(async () => {
    service = await startTestService({ anvil: true, env: { METRICS_ENABLED: 'true', METRICS_PORT: '0' } });
    const text = await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text();
    // Every registered metric has a TYPE line, samples or not; a histogram's samples carry suffixes.
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)];
    exported = new Set(types.flatMap(([, name, type]) => (type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name])));
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
  });

  it('are all exported by the service', () => {
    const exprs = [
      ...dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr as string)),
      ...alerts.groups.flatMap((g: any) => g.rules.map((r: any) => r.expr as string)),
    ];
    expect(exprs.length).toBeGreaterThan(20);
    const queried = new Set(exprs.flatMap(metricNames));
    // `up` is Prometheus' own series about each target.
    const unknown = [...queried].filter((name) => !exported.has(name) && name !== 'up');
    expect(unknown).toEqual([]);
    // The service's own metrics are all on the dashboard.
    const own = [...exported].filter((n) => /^(relayer_|requests_total|error_requests_total|request_latency)/.test(n) && !/_(sum|count)$/.test(n));
    expect(own.filter((n) => !queried.has(n))).toEqual([]);
  });

  it('are read from PromQL as names, not functions or labels', () => {
    expect(metricNames('histogram_quantile(0.99, sum by (le, network) (rate(relayer_rpc_request_duration_seconds_bucket{a="b c"}[5m])))')).toEqual([
      'relayer_rpc_request_duration_seconds_bucket',
    ]);
    expect(metricNames('max(a_b) > 300 and up{job="relayer"} == 0')).toEqual(['a_b', 'up']);
  });
});

describe('Dockerfile', () => {
  const [build, runtime] = dockerStages(read('Dockerfile'));
  const ci = read('.ci/run').split('\n');
  const runs = (stage: typeof build) => stage.steps.filter((s) => s.op === 'RUN').map((s) => s.args);

  it('builds as CI does, on the pinned Node line', () => {
    for (const command of runs(build)) expect(ci, command).toContain(command);
    const line = Number(/ARG NODE_VERSION=(\d+)/.exec(read('Dockerfile'))![1]);
    expect(supportedLines()).toContain(line);
    expect(line).toBe(Number(JSON.parse(read('package.json')).devDependencies.node.split('.')[0]));
    expect(build.from).toMatch(/^node:\$\{NODE_VERSION\}-bookworm-slim AS build$/);
    expect(runtime.from).toMatch(/^node:\$\{NODE_VERSION\}-bookworm-slim$/);
    expect(ci).toContain('node scripts/node-lines.mjs');
  });

  it('installs and starts the built tree as scripts/node-lines.mjs does, as a user other than root', () => {
    expect(runs(runtime)[0]).toBe(`${PRODUCTION_INSTALL.join(' ')} && npm cache clean --force`);
    const copied = runtime.steps.filter((s) => s.op === 'COPY').flatMap((s) => s.args.replace('--from=build /app/', '').split(' ').slice(0, -1));
    expect(copied.sort()).toEqual([...BUILT_TREE].sort());
    const cmd = runtime.steps.find((s) => s.op === 'CMD')!.args;
    expect(JSON.parse(cmd)).toEqual(START);
    expect(START.join(' ')).toBe(JSON.parse(read('package.json')).scripts.start);
    expect(runtime.steps.find((s) => s.op === 'USER')?.args).toBe('node');
    expect(runtime.steps.find((s) => s.op === 'HEALTHCHECK')?.args).toContain("/api/v1/health'");
    // Nothing the runtime stage copies from the context is left out by .dockerignore.
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(copied.filter((c) => ignored.some((i) => c === i || c.startsWith(`${i}/`)) && c !== 'dist')).toEqual([]);
  });
});
