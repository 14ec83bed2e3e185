// Signing and headers of an outgoing POST (DESIGN §4): X-Queue-Signature is sha256=hex(HMAC(secret,
// "{ts}.{rawBody}")) with ts the X-Queue-Timestamp (Unix seconds) of the same attempt; without a secret the
// header is absent, not empty. A receiver verifies the bytes it got, so the body is signed as sent.
import { createHmac } from 'node:crypto';

export function sign(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export interface AttemptHeaders {
  event: string;
  deliveryId: string;
  attempt: number;
  /** Unix seconds. */
  timestamp: number;
  secret: string | null;
  body: string;
}

export function deliveryHeaders(h: AttemptHeaders): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Sluice-Webhooks/1',
    'x-queue-event': h.event,
    'x-queue-delivery': h.deliveryId,
    'x-queue-delivery-attempt': String(h.attempt),
    'x-queue-timestamp': String(h.timestamp),
  };
  if (h.secret !== null) headers['x-queue-signature'] = sign(h.secret, h.timestamp, h.body);
  return headers;
}
