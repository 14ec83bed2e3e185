// The admin credential: X-Admin-Key equal to ADMIN_API_KEY, compared in constant time (over digests, so
// lengths leak nothing either). With no ADMIN_API_KEY configured every admin request is refused.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';
import type { Request } from './router.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export function isAdmin(req: Request, config: Config): boolean {
  if (config.adminApiKey === null || req.adminKey === '') return false;
  return timingSafeEqual(digest(req.adminKey), digest(config.adminApiKey));
}

export function requireAdmin(req: Request, config: Config): void {
  if (!isAdmin(req, config)) throw new AppError('UNAUTHORIZED', 'A valid X-Admin-Key is required');
}
