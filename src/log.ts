// A minimal leveled logger to stderr; the level and the format come from config.
//
// `text` (the default) is one human line per event. `json` (LOG_FORMAT=json) is exactly one JSON object per
// line, so a log shipper never has to stitch lines back together: an error's stack is a field, not extra
// lines. Fields given with an event (a request id, say) are keys of that object, or `key=value` after the text.
import { inspect } from 'node:util';
import type { Config } from './config.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

/** Values that say what an event is about: request_id, method, status… Flat, so both formats show them. */
export type LogFields = Record<string, string | number | boolean | null>;

export interface Log {
  /** Whether debug lines are written: a caller skips building one per request otherwise. */
  readonly debugging: boolean;
  debug(msg: string, err?: unknown, fields?: LogFields): void;
  info(msg: string, err?: unknown, fields?: LogFields): void;
  warn(msg: string, err?: unknown, fields?: LogFields): void;
  error(msg: string, err?: unknown, fields?: LogFields): void;
}

type Level = Exclude<keyof typeof LEVELS, 'silent'>;

/** `write` receives each line without its newline; the default is console.error (stderr), which tests capture. */
export function createLog(level: Config['logLevel'], format: Config['logFormat'] = 'text', write: (line: string) => void = (l) => console.error(l)): Log {
  const min = LEVELS[level];
  const at = (name: Level) => (msg: string, err?: unknown, fields?: LogFields) => {
    if (LEVELS[name] < min) return;
    write(format === 'json' ? jsonLine(name, msg, err, fields) : textLine(name, msg, err, fields));
  };
  return { debugging: LEVELS.debug >= min, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function textLine(level: Level, msg: string, err: unknown, fields: LogFields | undefined): string {
  let line = `${new Date().toISOString()} ${level.toUpperCase()} ${msg}`;
  if (fields) for (const [k, v] of Object.entries(fields)) line += ` ${k}=${typeof v === 'string' && /[\s"=]/.test(v) ? JSON.stringify(v) : String(v)}`;
  // inspect, as console.error did: it shows what a driver adds to its errors (a PostgreSQL error's detail, code…).
  if (err !== undefined) line += ` ${inspect(err)}`;
  return line;
}

function jsonLine(level: Level, msg: string, err: unknown, fields: LogFields | undefined): string {
  const out: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...fields };
  if (err !== undefined) out.err = errorFields(err);
  try {
    return JSON.stringify(out);
  } catch {
    // A field that cannot be serialised (a cycle in a thrown non-Error) must not lose the event.
    return JSON.stringify({ time: out.time, level, msg, err: { message: String(err) } });
  }
}

function errorFields(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: typeof err === 'string' ? err : String(err) };
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (err.stack) out.stack = err.stack;
  if (err.cause !== undefined && depth < 3) out.cause = errorFields(err.cause, depth + 1);
  return out;
}
