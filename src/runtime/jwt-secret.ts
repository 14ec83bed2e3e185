// The HS256 secret of the node's JWTs. JWT_SECRET when set (required in production: every node of a cluster
// must sign with the same one). Otherwise 48 random bytes generated on first boot and kept in
// DATA_DIR/jwt-secret (mode 0600), so tokens survive a restart of a local or single-node instance.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';

export const SECRET_FILE = 'jwt-secret';
const SECRET_BYTES = 48;

export function loadJwtSecret(config: Config, log: (msg: string) => void): Uint8Array {
  if (config.jwtSecret !== null) return new TextEncoder().encode(config.jwtSecret);
  const file = path.join(config.dataDir, SECRET_FILE);
  fs.mkdirSync(config.dataDir, { recursive: true });
  try {
    // 'wx': two processes booting on one directory keep the first one's secret, never overwrite it.
    fs.writeFileSync(file, `${randomBytes(SECRET_BYTES).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    fs.chmodSync(file, 0o600);
    log(`generated the JWT signing secret in ${file} (set JWT_SECRET to choose one)`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const secret = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64url');
  if (secret.length < 32) throw new Error(`${file} holds a secret shorter than 32 bytes; delete it to generate a new one`);
  return new Uint8Array(secret);
}
