// Server-Sent Events of /api/v1/events (and of one job, one queue) as an async iterator of envelopes.
//
// The service writes each envelope as an `id:` and a `data:` line and a `: keep-alive` comment every 15 s.
// A connection that stays silent for `idleTimeoutMs` (default 45 s, three keep-alives) is taken as dead.
// After a dropped connection the iterator reconnects with backoff and sends `Last-Event-ID`; today's
// service ignores it and replays nothing (docs/streams.md), so events published while disconnected are
// missed: read the REST state after a reconnect if that matters (`onReconnect`). Answers that cannot get
// better by waiting (401, 403, 404, 422) end the iteration with their error.
import { SluiceError, UnknownApiError } from './errors.js';
import { sleep, type HttpCore, type Query } from './http.js';
import type { EventEnvelope, JsonObject } from './types.js';

export interface EventStreamOptions {
  /** Resume after this event id (sent as Last-Event-ID). */
  lastEventId?: string;
  /** Stops the stream (the iteration ends without an error). */
  signal?: AbortSignal;
  /** Reconnect after a dropped connection (default true; false for a job's stream, which ends by itself). */
  reconnect?: boolean;
  /** Largest wait between reconnections (default 30 s). */
  maxReconnectDelayMs?: number;
  /** A connection silent this long is dropped and reopened (default 45 s). */
  idleTimeoutMs?: number;
  /** Called after each connection opens (0 for the first, then 1, 2… for reconnections). */
  onOpen?: (reconnection: number) => void;
  /** Called before waiting to reconnect. */
  onReconnect?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

export interface EventFilterOptions extends EventStreamOptions {
  /** Only events of this queue. */
  queue?: string;
  /** Event names (`job.completed`) or families (`job.*`). */
  events?: string | string[];
}

interface Frame {
  id: string | null;
  event: string | null;
  data: string;
}

/** Splits a text/event-stream into frames (the parsing rules of the HTML SSE specification). */
export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event: string | null = null;
  /** The last `id:` seen; it carries over to later frames, as in EventSource. */
  lastId: string | null = null;
  /** The server's `retry:` advice in ms, if any. */
  retryMs: number | null = null;

  push(chunk: string): Frame[] {
    this.buffer += chunk;
    const frames: Frame[] = [];
    for (;;) {
      const m = /\r\n|\n|\r/.exec(this.buffer);
      if (!m) break;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    return frames;
  }

  private line(line: string): Frame | null {
    if (line === '') {
      if (this.data.length === 0) {
        this.event = null;
        return null;
      }
      const frame = { id: this.lastId, event: this.event, data: this.data.join('\n') };
      this.data = [];
      this.event = null;
      return frame;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.lastId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    return null;
  }
}

/** A live stream of envelopes. Iterate it; `close()` (or the signal, or `break`) ends it. */
export class EventStream<D = JsonObject> implements AsyncIterable<EventEnvelope<D>> {
  private readonly ctl = new AbortController();
  private started = false;
  /** Id of the last event received: pass it as `lastEventId` to resume elsewhere. */
  lastEventId: string | null;

  constructor(
    private readonly http: HttpCore,
    private readonly path: string,
    private readonly query: Query,
    private readonly opts: EventStreamOptions = {},
  ) {
    this.lastEventId = opts.lastEventId ?? null;
    if (opts.signal) {
      if (opts.signal.aborted) this.ctl.abort();
      else opts.signal.addEventListener('abort', () => this.ctl.abort(), { once: true });
    }
  }

  close(): void {
    this.ctl.abort();
  }

  [Symbol.asyncIterator](): AsyncGenerator<EventEnvelope<D>, void, undefined> {
    if (this.started) throw new Error('Sluice: an EventStream can be iterated once');
    this.started = true;
    return this.run();
  }

  private async *run(): AsyncGenerator<EventEnvelope<D>, void, undefined> {
    const reconnect = this.opts.reconnect ?? true;
    const maxDelay = this.opts.maxReconnectDelayMs ?? 30_000;
    const idleMs = this.opts.idleTimeoutMs ?? 45_000;
    let failures = 0;
    let connections = 0;
    try {
      while (!this.ctl.signal.aborted) {
        let error: unknown = null;
        const parser = new SseParser();
        const conn = new AbortController();
        const stop = () => conn.abort();
        this.ctl.signal.addEventListener('abort', stop, { once: true });
        let idle: NodeJS.Timeout | undefined;
        const watch = () => {
          clearTimeout(idle);
          idle = setTimeout(() => conn.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
        };
        try {
          const res = await this.http.open({
            method: 'GET',
            path: this.path,
            query: this.query,
            signal: conn.signal,
            headers: {
              accept: 'text/event-stream',
              'cache-control': 'no-cache',
              ...(this.lastEventId !== null ? { 'last-event-id': this.lastEventId } : {}),
            },
          });
          if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
            throw new UnknownApiError({ status: res.status, code: `HTTP_${res.status}`, message: `${this.path} did not answer an event stream` });
          }
          this.opts.onOpen?.(connections++);
          watch();
          const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              watch();
              for (const frame of parser.push(value)) {
                failures = 0;
                if (frame.id !== null) this.lastEventId = frame.id;
                yield parseEnvelope<D>(frame, this.path);
              }
            }
          } finally {
            reader.cancel().catch(() => {});
          }
        } catch (err) {
          if (this.ctl.signal.aborted) return;
          // A refusal that waiting cannot fix ends the stream with its error.
          if (err instanceof SluiceError && err.status !== 0 && !err.retryable) throw err;
          error = err;
        } finally {
          clearTimeout(idle);
          this.ctl.signal.removeEventListener('abort', stop);
        }
        if (this.ctl.signal.aborted || !reconnect) {
          if (error !== null && !this.ctl.signal.aborted) throw error;
          return;
        }
        failures++;
        const retryAfter = error instanceof SluiceError && error.retryAfter !== null ? error.retryAfter * 1000 : 0;
        const base = parser.retryMs ?? 500;
        const delay = Math.max(retryAfter, Math.min(maxDelay, base * 2 ** (failures - 1)) * (0.5 + Math.random() / 2));
        this.opts.onReconnect?.({ attempt: failures, delayMs: delay, error: error ?? new Error('the stream ended') });
        try {
          await sleep(delay, this.ctl.signal);
        } catch {
          return;
        }
      }
    } finally {
      this.ctl.abort();
    }
  }
}

function parseEnvelope<D>(frame: Frame, path: string): EventEnvelope<D> {
  try {
    return JSON.parse(frame.data) as EventEnvelope<D>;
  } catch {
    throw new UnknownApiError({ status: 200, code: 'BAD_EVENT', message: `${path} sent an event that is not JSON: ${frame.data.slice(0, 100)}` });
  }
}

/** The filter query of /api/v1/events. */
export function filterQuery(o: EventFilterOptions): Query {
  return {
    queue: o.queue,
    events: o.events === undefined ? undefined : Array.isArray(o.events) ? o.events.join(',') : o.events,
  };
}
