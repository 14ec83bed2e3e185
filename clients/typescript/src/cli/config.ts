// Where the CLI finds its service and credentials. Precedence, first found wins, per setting:
//   1. flags (--url, --api-key, --admin-key)
//   2. the profile named by --profile or SLUICE_PROFILE
//   3. the environment (SLUICE_URL, SLUICE_API_KEY, SLUICE_ADMIN_KEY)
//   4. the profile file's default profile (its "default" field, else a profile named "default")
//   5. url http://localhost:8080 (what `make run` starts)
// An explicitly named profile beats the environment because naming it is the more deliberate act.
//
// The profile file: $SLUICE_CONFIG, else $XDG_CONFIG_HOME/sluice/config.json, else ~/.config/sluice/config.json:
//   { "default": "local",
//     "profiles": { "local": { "url": "http://localhost:8080", "api_key": "svc_test_…", "admin_key": "…" } } }
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export interface Profile {
  url?: string;
  api_key?: string;
  admin_key?: string;
}

export interface ResolvedConfig {
  url: string;
  apiKey: string | undefined;
  adminKey: string | undefined;
  /** Warnings to print (a config file others can read). */
  warnings: string[];
}

export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.SLUICE_CONFIG) return env.SLUICE_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'sluice', 'config.json');
}

function readProfiles(file: string, warnings: string[]): { default?: string; profiles: Record<string, Profile> } | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  const o = parsed as { default?: unknown; profiles?: unknown };
  if (o === null || typeof o !== 'object' || (o.profiles !== undefined && (typeof o.profiles !== 'object' || o.profiles === null))) {
    throw new UsageError(`${file}: expected {"profiles": {"name": {"url", "api_key"}}}`);
  }
  if (o.default !== undefined && typeof o.default !== 'string') throw new UsageError(`${file}: "default" must be a profile name`);
  const profiles = (o.profiles ?? {}) as Record<string, Profile>;
  for (const [name, p] of Object.entries(profiles)) {
    for (const k of ['url', 'api_key', 'admin_key'] as const) {
      if (p?.[k] !== undefined && typeof p[k] !== 'string') throw new UsageError(`${file}: profiles.${name}.${k} must be a string`);
    }
  }
  try {
    const mode = fs.statSync(file).mode;
    if (process.platform !== 'win32' && (mode & 0o077) !== 0) warnings.push(`${file} is readable by other users; chmod 600 it (it holds API keys)`);
  } catch {
    /* the read above worked; a failed stat only loses the warning */
  }
  return { ...(typeof o.default === 'string' ? { default: o.default } : {}), profiles };
}

export function resolveConfig(flags: { url?: string; 'api-key'?: string; 'admin-key'?: string; profile?: string }, env: NodeJS.ProcessEnv): ResolvedConfig {
  const warnings: string[] = [];
  const file = configPath(env);
  const named = flags.profile ?? env.SLUICE_PROFILE;
  const data = readProfiles(file, warnings);
  let explicit: Profile = {};
  let fallback: Profile = {};
  if (named !== undefined) {
    const p = data?.profiles[named];
    if (!p) {
      const known = Object.keys(data?.profiles ?? {});
      throw new UsageError(`no profile "${named}" in ${file}${known.length ? ` (profiles: ${known.join(', ')})` : ''}`);
    }
    explicit = p;
  } else if (data) {
    fallback = data.profiles[data.default ?? 'default'] ?? {};
    if (data.default !== undefined && !data.profiles[data.default]) throw new UsageError(`${file}: the default profile "${data.default}" does not exist`);
  }
  const pick = (flag: string | undefined, key: keyof Profile, envName: string): string | undefined =>
    flag ?? explicit[key] ?? (env[envName] || undefined) ?? fallback[key];
  return {
    url: pick(flags.url, 'url', 'SLUICE_URL') ?? 'http://localhost:8080',
    apiKey: pick(flags['api-key'], 'api_key', 'SLUICE_API_KEY'),
    adminKey: pick(flags['admin-key'], 'admin_key', 'SLUICE_ADMIN_KEY'),
    warnings,
  };
}
