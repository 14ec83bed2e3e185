// Cron expressions of schedules: 6 fields (second minute hour day-of-month month day-of-week) in an IANA time
// zone, through cron-parser. Parsing and next() cost up to a millisecond, so callers compute a fire time once
// and keep it. `H` (hashed) fields are seeded with the schedule id: the same schedule always hashes the same way.
import { CronExpressionParser } from 'cron-parser';

export interface Cron {
  expression: string;
  timezone: string;
  /** The schedule id: the seed of `H` fields. */
  seed: string;
}

/** What is wrong with a cron expression and time zone, per field; empty when it is usable. */
export function cronProblems(c: Cron, now: number): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  if (!validTimezone(c.timezone)) problems.push({ field: 'timezone', message: 'must be an IANA time zone name, such as Europe/Paris' });
  const fields = c.expression.trim().split(/\s+/);
  if (fields.length !== 6) {
    problems.push({ field: 'cron_expression', message: `must have 6 fields (second minute hour day-of-month month day-of-week), got ${fields.length}` });
  } else if (problems.length === 0) {
    try {
      nextFire(c, now);
    } catch (err) {
      problems.push({ field: 'cron_expression', message: `is not valid: ${(err as Error).message}` });
    }
  }
  return problems;
}

/** cron-parser takes a bad zone and answers "Invalid Date"; Intl refuses it. */
export function validTimezone(timezone: string): boolean {
  if (timezone.length === 0 || timezone.length > 100) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** The first fire time strictly after `after` (epoch ms). Throws for an expression that never fires. */
export function nextFire(c: Cron, after: number): number {
  const t = parse(c, after).next().getTime();
  if (!Number.isFinite(t)) throw new Error('it has no next fire time');
  return t;
}

/** The last fire time at or before `at`: the one fire a node owes after being down across several. */
export function latestFire(c: Cron, at: number): number {
  const t = parse(c, at + 1).prev().getTime();
  if (!Number.isFinite(t)) throw new Error('it has no previous fire time');
  return t;
}

function parse(c: Cron, currentDate: number) {
  return CronExpressionParser.parse(c.expression.trim(), { tz: c.timezone, currentDate, hashSeed: c.seed });
}
