// Reads of API keys by digest for the authenticator, batched. One read runs at a time; every digest asked for while
// it runs goes into the next one (up to READ_MAX per statement), and a digest asked for twice is read once. A flood
// of requests with keys the node does not know (a misconfigured client, someone guessing) then costs the store one
// statement at a time however fast it comes, instead of one per request on the general pool that every tenant's
// reads share. Beyond PENDING_MAX digests waiting, a request is refused at once (503, retry), not queued.
import { AppError } from '../errors.js';
import type { KeyRow } from '../io/db/sql/findApiKeys.js';

const READ_MAX = 500;
export const PENDING_MAX = 10_000;

interface Asked {
  promise: Promise<KeyRow | null>;
  resolve(row: KeyRow | null): void;
  reject(err: unknown): void;
}

export class KeyLookups {
  /** Digests not read yet, in the order asked. */
  private readonly waiting = new Map<string, Asked>();
  /** Digests of the read in flight. */
  private readonly reading = new Map<string, Asked>();
  private running = false;

  constructor(private readonly read: (digests: string[]) => Promise<KeyRow[]>) {}

  /** The key with this digest, or null when there is none. */
  find(digest: string): Promise<KeyRow | null> {
    const known = this.reading.get(digest) ?? this.waiting.get(digest);
    if (known) return known.promise;
    if (this.waiting.size >= PENDING_MAX) {
      return Promise.reject(new AppError('UNAVAILABLE', 'Too many credentials are being checked at once; retry', { retry_after: 1 }));
    }
    let resolve!: Asked['resolve'];
    let reject!: Asked['reject'];
    const promise = new Promise<KeyRow | null>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.waiting.set(digest, { promise, resolve, reject });
    this.next();
    return promise;
  }

  private next(): void {
    if (this.running || this.waiting.size === 0) return;
    this.running = true;
    for (const [digest, asked] of this.waiting) {
      if (this.reading.size >= READ_MAX) break;
      this.reading.set(digest, asked);
      this.waiting.delete(digest);
    }
    this.read([...this.reading.keys()]).then(
      (rows) => {
        const found = new Map(rows.map((r) => [r.key_digest, r]));
        for (const [digest, asked] of this.reading) asked.resolve(found.get(digest) ?? null);
        this.done();
      },
      (err: unknown) => {
        for (const asked of this.reading.values()) asked.reject(err);
        this.done();
      },
    );
  }

  private done(): void {
    this.reading.clear();
    this.running = false;
    this.next();
  }
}
