// Signatures of outgoing webhooks and completion callbacks: `X-Queue-Signature: sha256=<hex>` where hex is
// HMAC-SHA256(secret, "{X-Queue-Timestamp}.{raw body}"). Verify over the raw bytes as received: a body parsed
// and serialised again may differ by a space and fail.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The `X-Queue-Signature` value for this timestamp (Unix seconds) and raw body. */
export function signPayload(secret: string, timestamp: string | number, rawBody: string | Uint8Array): string {
  const h = createHmac('sha256', secret);
  h.update(`${timestamp}.`);
  h.update(rawBody);
  return `sha256=${h.digest('hex')}`;
}

export interface VerifyOptions {
  secret: string;
  /** The X-Queue-Signature header. */
  signature: string | null | undefined;
  /** The X-Queue-Timestamp header (Unix seconds). */
  timestamp: string | null | undefined;
  rawBody: string | Uint8Array;
  /** Refuse timestamps further than this from now, against replays (default 300 s; 0 disables the check). */
  toleranceSeconds?: number;
  /** Now, in ms (tests). */
  now?: number;
}

/** True when the signature is the one the secret gives for this timestamp and body, and the timestamp is recent. */
export function verifySignature(o: VerifyOptions): boolean {
  if (!o.signature || !o.timestamp || !/^\d+$/.test(o.timestamp)) return false;
  const tolerance = o.toleranceSeconds ?? 300;
  if (tolerance > 0 && Math.abs((o.now ?? Date.now()) / 1000 - Number(o.timestamp)) > tolerance) return false;
  const expected = Buffer.from(signPayload(o.secret, o.timestamp, o.rawBody));
  const given = Buffer.from(o.signature.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}
