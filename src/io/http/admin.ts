// The admin credential: X-Admin-Key equal to ADMIN_API_KEY, compared in constant time (over digests, so
// lengths leak nothing either). With no ADMIN_API_KEY configured every admin request is refused.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';
import type { Request } from './router.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export function isAdmin(req: Request, config: Config): boolean {
  return adminKeyValid(req.adminKey, config);
}

/** The X-Admin-Key value is ADMIN_API_KEY (false when either is empty). */
export function adminKeyValid(key: string, config: Config): boolean {
  if (config.adminApiKey === null || key === '') return false;
  return timingSafeEqual(digest(key), digest(config.adminApiKey));
}

export function requireAdmin(req: Request, config: Config): void {
  if (!isAdmin(req, config)) throw new AppError('UNAUTHORIZED', 'A valid X-Admin-Key is required');
}
