#!/usr/bin/env node
// `sluice`: the command line of the SDK. Arguments are parsed here (node:util parseArgs, no framework): the
// command words come first or after global options, then each command's own options. Commands live in
// commands.ts; exit codes are one table (EXIT below, documented in the package README and `sluice help`).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ConnectionError,
  ForbiddenError,
  NotFoundError,
  QuotaExceededError,
  RateLimitedError,
  SluiceError,
  TooManyStreamsError,
  UnauthorizedError,
  UnavailableError,
} from '../errors.js';
import { COMMANDS, type Command, type OptionSpec } from './commands.js';
import { UsageError } from './config.js';

const pathsOf = (c: Command): string[] => [c.path, ...(c.aliases ?? [])];

export const EXIT = {
  OK: 0,
  /** The service refused the request (422, 409, 5xx…), or some items of a batch failed. */
  API_ERROR: 1,
  USAGE: 2,
  /** 401 or 403: no valid credential, or it lacks the permission. */
  AUTH: 3,
  NOT_FOUND: 4,
  /** 429: rate limited, or a plan quota is used up. */
  LIMITED: 5,
  /** No answer: the service cannot be reached, timed out, or answered 503. */
  UNREACHABLE: 6,
} as const;

const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', description: 'base URL of the service (default $SLUICE_URL, else http://localhost:8080)' },
  'api-key': { type: 'string', description: 'API key or access token (default $SLUICE_API_KEY)' },
  'admin-key': { type: 'string', description: 'X-Admin-Key for `admin` commands (default $SLUICE_ADMIN_KEY)' },
  profile: { type: 'string', description: 'a profile of ~/.config/sluice/config.json (default $SLUICE_PROFILE)' },
  json: { type: 'boolean', description: 'print JSON for scripts instead of tables' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
};

function version(): string {
  try {
    return (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Finds the command named by the leading words of argv (global options may come first). */
function findCommand(argv: string[]): { command: Command | null; words: string[]; rest: string[] } {
  const words: string[] = [];
  const rest: string[] = [];
  let command: Command | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (command || a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    if (a.startsWith('-')) {
      rest.push(a);
      const name = a.replace(/^-+/, '');
      if (!a.includes('=') && GLOBAL_OPTIONS[name]?.type === 'string' && i + 1 < argv.length) rest.push(argv[++i]!);
      continue;
    }
    words.push(a);
    const said = words.join(' ');
    command = COMMANDS.find((c) => pathsOf(c).includes(said)) ?? null;
    if (!command && !COMMANDS.some((c) => pathsOf(c).some((p) => p.startsWith(`${said} `)))) {
      // Not a command nor the start of one.
      rest.push(...argv.slice(i + 1));
      break;
    }
  }
  return { command, words, rest };
}

function optionsHelp(opts: Record<string, OptionSpec>): string {
  return Object.entries(opts)
    .map(([name, o]) => {
      const flag = `${o.short ? `-${o.short}, ` : '    '}--${name}${o.type === 'string' ? ` <${o.placeholder ?? 'value'}>` : ''}`;
      return `  ${flag.padEnd(30)} ${o.description}${o.multiple ? ' (repeatable)' : ''}`;
    })
    .join('\n');
}

function mainHelp(): string {
  const groups = COMMANDS.flatMap((c) => [`  ${c.path.padEnd(20)} ${c.summary}`, ...(c.aliases ?? []).map((a) => `  ${a.padEnd(20)} the same as ${c.path}`)]);
  return `sluice ${version()}: the command line of the Sluice job queue

Usage: sluice <command> [options]

Commands:
${groups.join('\n')}

Global options:
${optionsHelp(GLOBAL_OPTIONS)}

Configuration, first found wins: flags; the profile named by --profile or $SLUICE_PROFILE; $SLUICE_URL,
$SLUICE_API_KEY, $SLUICE_ADMIN_KEY; the default profile of ~/.config/sluice/config.json ($SLUICE_CONFIG):
  {"default": "local", "profiles": {"local": {"url": "http://localhost:8080", "api_key": "svc_test_…"}}}

Exit codes: 0 ok; 1 the service refused the request (or some items of a batch failed); 2 usage error;
3 authentication or permission (401, 403); 4 not found; 5 rate limited or quota exceeded (429);
6 the service is unreachable, timed out or unavailable (503).

Run \`sluice <command> --help\` for a command's options.
`;
}

function commandHelp(c: Command): string {
  const opts = { ...(c.options ?? {}), ...GLOBAL_OPTIONS };
  return `sluice ${c.path} ${c.usage}\n\n${c.summary}.${c.details ? `\n\n${c.details}` : ''}\n\nOptions:\n${optionsHelp(opts)}\n`;
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.USAGE;
  if (err instanceof UnauthorizedError || err instanceof ForbiddenError) return EXIT.AUTH;
  if (err instanceof NotFoundError) return EXIT.NOT_FOUND;
  if (err instanceof RateLimitedError || err instanceof QuotaExceededError || err instanceof TooManyStreamsError) return EXIT.LIMITED;
  if (err instanceof ConnectionError || err instanceof UnavailableError) return EXIT.UNREACHABLE;
  return EXIT.API_ERROR;
}

function reportError(err: unknown, asJson: boolean): void {
  if (asJson) {
    const body =
      err instanceof SluiceError
        ? (err.body ?? { code: err.code, message: err.message, status: err.status })
        : { code: err instanceof UsageError ? 'USAGE' : 'ERROR', message: err instanceof Error ? err.message : String(err) };
    process.stderr.write(`${JSON.stringify({ error: body })}\n`);
    return;
  }
  if (err instanceof SluiceError) {
    const extra = err.retryAfter !== null ? ` (retry after ${err.retryAfter} s)` : '';
    process.stderr.write(`sluice: ${err.code}: ${err.message}${extra}\n`);
    for (const d of err.details) process.stderr.write(`  ${d.field}: ${d.message}\n`);
  } else if (err instanceof UsageError) {
    process.stderr.write(`sluice: ${err.message}\nRun \`sluice help\` for usage.\n`);
  } else {
    process.stderr.write(`sluice: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

export async function main(argv: string[]): Promise<number> {
  const { command, words, rest } = findCommand(argv);
  const wantsJson = argv.includes('--json');
  if (!command) {
    if (words.length === 0 || words[0] === 'help') {
      const topic = words.length > 1 ? COMMANDS.find((c) => pathsOf(c).includes(words.slice(1).join(' '))) : undefined;
      if (argv.includes('--version') || argv.includes('-v')) {
        process.stdout.write(`${version()}\n`);
        return EXIT.OK;
      }
      process.stdout.write(topic ? commandHelp(topic) : mainHelp());
      return words.length === 0 && !argv.includes('--help') && !argv.includes('-h') ? EXIT.USAGE : EXIT.OK;
    }
    const prefix = words.join(' ');
    const subs = COMMANDS.flatMap((c) => pathsOf(c).filter((p) => p.startsWith(`${prefix} `)).map((p) => ({ c, p })));
    if (subs.length > 0 && (argv.includes('--help') || argv.includes('-h'))) {
      process.stdout.write(subs.map(({ c, p }) => `sluice ${p} ${c.usage}\n    ${c.summary}`).join('\n') + '\n');
      return EXIT.OK;
    }
    reportError(
      new UsageError(subs.length > 0 ? `${prefix}: expected one of ${subs.map(({ p }) => p.slice(prefix.length + 1)).join(', ')}` : `unknown command "${prefix}"`),
      wantsJson,
    );
    return EXIT.USAGE;
  }
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(
        Object.entries({ ...(command.options ?? {}), ...GLOBAL_OPTIONS }).map(([k, o]) => [
          k,
          { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
    values = parsed.values as typeof values;
    positionals = parsed.positionals;
  } catch (err) {
    reportError(new UsageError((err as Error).message), wantsJson);
    return EXIT.USAGE;
  }
  if (values.help) {
    process.stdout.write(commandHelp(command));
    return EXIT.OK;
  }
  const [min, max] = command.args ?? [0, 0];
  if (positionals.length < min || positionals.length > max) {
    reportError(new UsageError(`usage: sluice ${command.path} ${command.usage}`), values.json === true);
    return EXIT.USAGE;
  }
  try {
    return (await command.run({ positionals, values, json: values.json === true })) ?? EXIT.OK;
  } catch (err) {
    reportError(err, values.json === true);
    return exitCodeOf(err);
  }
}

// Run when executed (the bin), not when imported (tests import exitCodeOf).
const self = process.argv[1] ? fs.realpathSync(process.argv[1]) : '';
if (self === fs.realpathSync(fileURLToPath(import.meta.url))) {
  // `sluice jobs list --all | head`: the reader left; that is not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`sluice: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = EXIT.API_ERROR;
    },
  );
}
