// Live updates over the server's SSE routes. The whole app shares ONE stream of the organization's events
// (GET /api/v1/events): pages subscribe to it and re-read what an event touches, so nothing polls. A job page
// adds the job's own stream, a queue page its queue's stats stream. EventSource cannot send headers, so the
// access token goes in the query string (the only routes that accept it there).
//
// EventSource reconnects by itself after a network error, with the URL it was given; once the token in it
// has expired that reconnection is refused (401) and the source closes, so a closed source is reopened here
// with the current token. Events sent while disconnected are lost (the server does not replay): pages
// re-read everything on `resync`.
import { useEffect, useRef, useState } from 'preact/hooks';
import { currentAccessToken } from './session';

export interface Envelope {
  id: string;
  event: string;
  created_at: string;
  data: Record<string, unknown> & { job_id?: string; queue_name?: string; status?: string };
}

export type LiveStatus = 'off' | 'connecting' | 'live' | 'down';

type Listener = (e: Envelope) => void;

function parse(raw: string): Envelope | null {
  try {
    const e = JSON.parse(raw) as Envelope;
    return typeof e?.event === 'string' && e.data && typeof e.data === 'object' ? e : null;
  } catch {
    return null;
  }
}

class OrgEvents {
  private source: EventSource | null = null;
  private reopen: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private missed = false;
  status: LiveStatus = 'off';
  readonly listeners = new Set<Listener>();
  readonly resyncs = new Set<() => void>();
  readonly statusListeners = new Set<() => void>();

  start(): void {
    if (this.source || this.reopen) return;
    this.open();
  }

  stop(): void {
    if (this.reopen) clearTimeout(this.reopen);
    this.reopen = null;
    this.source?.close();
    this.source = null;
    this.failures = 0;
    this.missed = false;
    this.setStatus('off');
  }

  private open(): void {
    this.reopen = null;
    const token = currentAccessToken();
    if (!token) return this.setStatus('off');
    this.setStatus('connecting');
    const es = new EventSource(`/api/v1/events?token=${encodeURIComponent(token)}`);
    this.source = es;
    es.onopen = () => {
      this.failures = 0;
      this.setStatus('live');
      if (this.missed) {
        this.missed = false;
        for (const fn of this.resyncs) fn();
      }
    };
    es.onmessage = (m: MessageEvent<string>) => {
      const e = parse(m.data);
      if (e) for (const fn of this.listeners) fn(e);
    };
    es.onerror = () => {
      this.missed = true;
      if (es.readyState !== EventSource.CLOSED) return this.setStatus('connecting');
      es.close();
      if (this.source === es) this.source = null;
      this.setStatus('down');
      this.failures++;
      this.reopen = setTimeout(() => this.open(), Math.min(30, 2 ** this.failures) * 1000);
    };
  }

  private setStatus(s: LiveStatus): void {
    if (this.status === s) return;
    this.status = s;
    for (const fn of this.statusListeners) fn();
  }
}

export const orgEvents = new OrgEvents();

/** Calls `fn` with every event of the organization while the component is mounted. */
export function useOrgEvents(fn: Listener): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const l: Listener = (e) => ref.current(e);
    orgEvents.listeners.add(l);
    return () => void orgEvents.listeners.delete(l);
  }, []);
}

/** Calls `fn` after the org stream came back from a disconnection (events may have been missed). */
export function useResync(fn: () => void): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const l = () => ref.current();
    orgEvents.resyncs.add(l);
    return () => void orgEvents.resyncs.delete(l);
  }, []);
}

export function useLiveStatus(): LiveStatus {
  const [status, set] = useState(orgEvents.status);
  useEffect(() => {
    const l = () => set(orgEvents.status);
    orgEvents.statusListeners.add(l);
    return () => void orgEvents.statusListeners.delete(l);
  }, []);
  return status;
}

/**
 * One stream of its own (a job's, a queue's), open while `path` is not null and the component is mounted.
 * `onEvent` returning true closes it (a job stream after a final status: the server ends it, and
 * EventSource would otherwise reconnect). `onFailure` runs when the server refused it (404, 401). A new
 * `restart` value opens a new stream on the same path.
 */
export function useStream(path: string | null, onEvent: (e: Envelope) => boolean | void, onFailure?: () => void, restart = 0): void {
  const handlers = useRef({ onEvent, onFailure });
  handlers.current = { onEvent, onFailure };
  useEffect(() => {
    if (path === null) return;
    const token = currentAccessToken();
    if (!token) return;
    const es = new EventSource(`${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`);
    es.onmessage = (m: MessageEvent<string>) => {
      const e = parse(m.data);
      if (e && handlers.current.onEvent(e) === true) es.close();
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) handlers.current.onFailure?.();
    };
    return () => es.close();
  }, [path, restart]);
}

/** A trigger that runs `fn` once, `ms` after the first call of a burst; calls meanwhile join that run. */
export function useCoalesced(fn: () => void, ms: number): () => void {
  const ref = useRef(fn);
  ref.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return useRef(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      ref.current();
    }, ms);
  }).current;
}

/** Re-renders every `ms` (ages and "x s ago" move on their own); one timer per mounted caller, no requests. */
export function useNow(ms = 1000): number {
  const [now, set] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => set(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
