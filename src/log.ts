// A minimal leveled logger to stderr; the level comes from config.
import type { Config } from './config.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export interface Log {
  debug(msg: string, err?: unknown): void;
  info(msg: string, err?: unknown): void;
  warn(msg: string, err?: unknown): void;
  error(msg: string, err?: unknown): void;
}

export function createLog(level: Config['logLevel']): Log {
  const min = LEVELS[level];
  const at = (name: keyof typeof LEVELS) => (msg: string, err?: unknown) => {
    if (LEVELS[name] < min) return;
    const line = `${new Date().toISOString()} ${name.toUpperCase()} ${msg}`;
    if (err === undefined) console.error(line);
    else console.error(line, err);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
