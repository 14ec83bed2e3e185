// The deployment files agree with the code: every setting they name is one src/config.ts reads and the README
// documents, the shipped placeholders cannot boot, the probes name the health routes, every start command gives the
// node the flags the benchmarks measure it with, and the image builds where a Docker engine runs (skipped with a
// message elsewhere: there is none on the development machines).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { NODE_FLAGS } from '../bench/lib.js';
import { ROOT, STORE } from './helpers.js';

const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');

/** `KEY: value` lines under a top-level `data:`/`stringData:`/`environment:` block of a simple YAML file. */
function yamlSettings(text: string, block: string): Record<string, string> {
  const out: Record<string, string> = {};
  let inside = false;
  let indent = -1;
  for (const line of text.split('\n')) {
    const m = /^(\s*)([A-Za-z_][A-Za-z0-9_]*):\s*(.*)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length;
    if (m[2] === block && m[3] === '') {
      inside = true;
      indent = -1;
      continue;
    }
    if (!inside) continue;
    if (indent === -1) indent = depth;
    if (depth < indent) {
      inside = false;
      continue;
    }
    if (depth === indent) out[m[2]!] = m[3]!.replace(/^"(.*)"$/, '$1');
  }
  return out;
}

const envFile = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split('\n')
      .filter((l) => /^[A-Z_][A-Z0-9_]*=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

const dockerEnv = (text: string): string[] => {
  const m = /^ENV ([\s\S]*?)(?:\n(?!\s))/m.exec(text);
  return [...(m?.[1] ?? '').matchAll(/([A-Z_][A-Z0-9_]*)=/g)].map((x) => x[1]!);
};

test('every setting the deployment files name is read by src/config.ts and documented in the README', () => {
  const config = read('src/config.ts');
  const readme = read('README.md');
  const named = new Map<string, string>();
  const add = (names: string[], where: string) => names.forEach((n) => named.set(n, where));
  add(Object.keys(yamlSettings(read('deploy/k8s/configmap.yaml'), 'data')), 'k8s configmap');
  add(Object.keys(yamlSettings(read('deploy/k8s/secret.yaml'), 'stringData')), 'k8s secret');
  const compose = read('deploy/compose.yml');
  add(Object.keys(yamlSettings(compose.slice(compose.indexOf('\n  sluice:')), 'environment')), 'compose');
  add(Object.keys(envFile(read('deploy/systemd/sluice.env.example'))), 'systemd env');
  add([...read('deploy/systemd/sluice.service').matchAll(/^Environment=([A-Z_]+)=/gm)].map((m) => m[1]!), 'systemd unit');
  add(dockerEnv(read('Dockerfile')), 'Dockerfile');
  assert.ok(named.size >= 12, `found ${[...named.keys()].join(', ')}`);
  for (const [name, where] of named) {
    assert.ok(config.includes(`'${name}'`) || config.includes(`env.${name}`), `${name} (${where}) is not read by src/config.ts`);
    assert.ok(readme.includes(`| \`${name}\``), `${name} (${where}) is not in the README configuration table`);
  }
});

test('the shipped secret placeholders cannot boot a node', () => {
  const k8s = { ...yamlSettings(read('deploy/k8s/configmap.yaml'), 'data'), ...yamlSettings(read('deploy/k8s/secret.yaml'), 'stringData') };
  const systemd = { NODE_ENV: 'production', ...envFile(read('deploy/systemd/sluice.env.example')) };
  for (const [name, env] of [['k8s', k8s], ['systemd', systemd]] as const) {
    assert.throws(
      () => loadConfig(env),
      (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('JWT_SECRET')) && err.problems.some((p) => p.startsWith('ADMIN_API_KEY')),
      name,
    );
    if ('CLUSTER_SECRET' in env) assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('CLUSTER_SECRET')), name);
    // With real secrets the same files are a valid configuration.
    const real = { JWT_SECRET: 'j'.repeat(40), ADMIN_API_KEY: 'a'.repeat(20), ...('CLUSTER_SECRET' in env ? { CLUSTER_SECRET: 'c'.repeat(40) } : {}) };
    const c = loadConfig({ ...env, ...real });
    assert.equal(c.production, true, name);
  }
});

test('the probes name the health routes, and the image checks readiness as a non-root user', () => {
  const deployment = read('deploy/k8s/deployment.yaml');
  assert.match(deployment, /livenessProbe:\s+httpGet:\s+path: \/health\/live/);
  assert.match(deployment, /readinessProbe:\s+httpGet:\s+path: \/health\/ready/);
  for (const kind of ['Deployment', 'Service', 'PodDisruptionBudget', 'ConfigMap', 'Secret']) {
    assert.ok(fs.readdirSync(path.join(ROOT, 'deploy/k8s')).some((f) => read(`deploy/k8s/${f}`).includes(`kind: ${kind}`)), `a ${kind}`);
  }
  const docker = read('Dockerfile');
  assert.match(docker, /^USER node$/m);
  assert.match(docker, /^HEALTHCHECK .*\n?.*\/health\/ready/m);
  assert.match(docker, /npm ci --omit=dev/);
});

test('production, `make run` and the benchmarks start the node with the same flags', () => {
  const flags = NODE_FLAGS.join(' ');
  assert.match(read('Dockerfile'), new RegExp(`^CMD \\["node", ${NODE_FLAGS.map((f) => `"${f}", `).join('')}"dist/main\\.js"\\]$`, 'm'));
  assert.match(read('deploy/systemd/sluice.service'), new RegExp(`^ExecStart=/usr/bin/node ${flags} /opt/sluice/dist/main\\.js$`, 'm'));
  assert.match(read('Makefile'), new RegExp(`^NODE_FLAGS := ${flags}$`, 'm'));
  assert.match(read('Makefile'), /^\t\$\(NODE\) \$\(NODE_FLAGS\) src\/main\.ts$/m);
});

const dockerSkip = (): string | false => {
  if (STORE !== 'pg') return 'the image is built in the PostgreSQL run only';
  const info = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 });
  return info.status === 0 ? false : 'no Docker engine here (`docker info` failed): the image is not built';
};

test('the Docker image builds', { skip: dockerSkip() }, () => {
  const tag = `sluice-test:${randomBytes(4).toString('hex')}`;
  try {
    execFileSync('docker', ['build', '--quiet', '-t', tag, '.'], { cwd: ROOT, stdio: 'inherit', timeout: 15 * 60_000 });
    const user = execFileSync('docker', ['image', 'inspect', '--format', '{{.Config.User}}', tag], { encoding: 'utf8' }).trim();
    assert.equal(user, 'node');
  } finally {
    spawnSync('docker', ['image', 'rm', '-f', tag], { stdio: 'ignore' });
  }
});
