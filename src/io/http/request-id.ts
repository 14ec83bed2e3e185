// Every HTTP request has an id: the caller's X-Request-Id when it is sane (a proxy or client that already
// names its requests keeps its name end to end), else a new UUID. It goes back in the X-Request-Id response
// header and into that request's log lines, so a user's report of a failed call can be found in the log.
import { randomUUID } from 'node:crypto';

/** Printable, no spaces, quotes or separators a log line or header could be confused by; at most 128 chars. */
const SANE = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

// New ids share a random prefix per process and count in their last group: unique like random UUIDs (the
// prefix keeps 74 random bits), at a fraction of the cost of drawing one per request.
const PREFIX = randomUUID().slice(0, 24);
let counter = 0;

export function requestIdOf(incoming: string): string {
  if (SANE.test(incoming)) return incoming;
  counter = (counter + 1) % 0x1000000000000;
  return PREFIX + counter.toString(16).padStart(12, '0');
}
