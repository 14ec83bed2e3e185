// One attempt of an outgoing POST: SSRF check of the URL → wait for one of the process-wide slots → POST with
// undici under a timeout → the outcome. No redirects are followed (a redirect could lead past the guard), and
// the response body is discarded. Retrying is the deliverer's business (deliverer.ts).
import { Agent, request } from 'undici';
import { guardedLookup, urlProblem, type UrlPolicy } from './ssrf.js';

export interface AttemptResult {
  ok: boolean;
  /** The HTTP status, null when no response came. */
  status: number | null;
  error: string | null;
}

/** Counting semaphore: at most `size` holders, the others wait in order. */
class Slots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async acquire(): Promise<void> {
    if (this.used < this.size) {
      this.used++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next(); // the slot passes straight to the next waiter
    else this.used--;
  }
}

export interface SenderOptions {
  policy: UrlPolicy;
  timeoutMs: number;
  concurrency: number;
}

export class Sender {
  private readonly agent: Agent;
  private readonly slots: Slots;
  /** Aborted at stop: requests in flight end at once (their deliveries stay pending and resume at boot). */
  private readonly stopping = new AbortController();

  constructor(private readonly opts: SenderOptions) {
    this.slots = new Slots(opts.concurrency);
    this.agent = new Agent({
      connect: opts.policy.blockPrivate ? { lookup: guardedLookup, timeout: opts.timeoutMs } : { timeout: opts.timeoutMs },
    });
  }

  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  async attempt(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const problem = urlProblem(url, this.opts.policy);
    if (problem !== null) return { ok: false, status: null, error: `url ${problem}` };
    await this.slots.acquire();
    try {
      const res = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.stopping.signal]),
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
      });
      await res.body.dump();
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return { ok, status: res.statusCode, error: ok ? null : `HTTP ${res.statusCode}` };
    } catch (err) {
      const e = err as Error & { code?: string; cause?: Error & { code?: string } };
      const cause = e.cause?.message ?? '';
      return { ok: false, status: null, error: [e.code ?? e.name, e.message, cause].filter(Boolean).join(': ').slice(0, 500) };
    } finally {
      this.slots.release();
    }
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await this.agent.close().catch(() => {});
  }
}
