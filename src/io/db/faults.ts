// Whose fault a store error is, from its SQLSTATE (PostgreSQL and PGlite report the same codes; the PGlite
// storage thread passes them on): the data's, the store's, or neither (a bug in our SQL).
import { AppError } from '../../errors.js';

const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * The statement was refused because of a value in it: class 22 (data exception: a NUL in text or jsonb,
 * untranslatable characters, values out of range), 54 (program limit exceeded: a value too large or too deep to
 * index or store), 23514 (a CHECK constraint) and 23503 (a foreign key: a row of an organization deleted while its
 * actors still wrote). Retrying without that value can succeed.
 */
export function isDataFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !SQLSTATE.test(code)) return false;
  return code.startsWith('22') || code.startsWith('54') || code === '23514' || code === '23503';
}

/**
 * The store cannot be reached or cannot serve now: the driver's network errors (no SQLSTATE), class 08
 * (connection exception), 53 (insufficient resources), 57 (operator intervention: shutdown, recovery) and
 * 58 (system error). Anything else is a statement the store refused.
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof AppError) return err.code === 'UNAVAILABLE';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !SQLSTATE.test(code)) return true;
  return ['08', '53', '57', '58'].some((c) => code.startsWith(c));
}

/** The catalog's 503 for a store that is down, or the error as it is. */
export function storeError(err: unknown): unknown {
  return isUnavailable(err) ? new AppError('UNAVAILABLE', 'The store is unavailable; retry shortly') : err;
}
