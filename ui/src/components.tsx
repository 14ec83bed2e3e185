// Small building blocks shared by the pages.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again, keeping what is shown until the answer comes (no flicker on live updates). */
  reload: () => void;
  /** Changes what is shown without a request (an event said what changed). */
  update: (fn: (d: T) => T) => void;
}

/** Runs `load` when `deps` change and on reload(); an answer that arrives after a newer request is dropped. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, set] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const seq = useRef(0);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(() => {
    const mine = ++seq.current;
    set((s) => ({ ...s, loading: true }));
    loader.current().then(
      (data) => mine === seq.current && set({ data, error: null, loading: false }),
      (error: unknown) => mine === seq.current && set((s) => ({ data: s.data, error, loading: false })),
    );
  }, []);
  useEffect(() => {
    set({ data: undefined, error: null, loading: true });
    reload();
  }, deps);
  const update = useCallback((fn: (d: T) => T) => set((s) => (s.data === undefined ? s : { ...s, data: fn(s.data) })), []);
  return { ...state, reload, update };
}

// --- notices ---

interface Toast {
  id: number;
  text: string;
  kind: 'ok' | 'error';
}
let toasts: Toast[] = [];
let toastSeq = 0;
const toastListeners = new Set<() => void>();

export function toast(text: string, kind: Toast['kind'] = 'ok'): void {
  const t = { id: ++toastSeq, text, kind };
  toasts = [...toasts, t];
  for (const fn of toastListeners) fn();
  setTimeout(() => {
    toasts = toasts.filter((x) => x !== t);
    for (const fn of toastListeners) fn();
  }, kind === 'error' ? 8000 : 4000);
}

export function Toasts() {
  const [, tick] = useState(0);
  useEffect(() => {
    const fn = () => tick((n) => n + 1);
    toastListeners.add(fn);
    return () => void toastListeners.delete(fn);
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A button that runs an API action: disabled while it runs, an error becomes a notice, `done` says what happened. */
export function Action(props: {
  run: () => Promise<unknown>;
  children: ComponentChildren;
  /** Asked with window.confirm first (purges, cancels). */
  confirm?: string;
  kind?: 'primary' | 'danger' | 'plain';
  done?: string | ((result: any) => string);
  disabled?: boolean;
  title?: string;
  testId?: string;
}) {
  const [busy, setBusy] = useState(false);
  const click = async () => {
    if (props.confirm && !window.confirm(props.confirm)) return;
    setBusy(true);
    try {
      const result = await props.run();
      if (props.done) toast(typeof props.done === 'string' ? props.done : props.done(result));
    } catch (err) {
      toast(messageOf(err), 'error');
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class={`btn btn-${props.kind ?? 'plain'}`} disabled={busy || props.disabled} title={props.title} data-testid={props.testId} onClick={click}>
      {props.children}
    </button>
  );
}

export function StatusBadge({ status }: { status: string | null | undefined }) {
  const s = status ?? 'unknown';
  return <span class={`badge status-${s}`}>{s === 'deadletter' ? 'dead letter' : s}</span>;
}

/** A load error: "not found" for a 404 (unknown id, or another organization's), the message otherwise. */
export function LoadError({ error, what }: { error: unknown; what: string }) {
  if (error instanceof ApiError && error.status === 404) {
    return (
      <div class="panel empty" data-testid="not-found">
        <h2>{what} not found</h2>
        <p>No {what.toLowerCase()} with this id exists in your organization.</p>
      </div>
    );
  }
  if (error instanceof ApiError && error.status === 403) {
    return (
      <div class="panel empty">
        <h2>Not allowed</h2>
        <p>This API key may not read this: {error.message}</p>
      </div>
    );
  }
  return (
    <div class="panel error" role="alert">
      <h2>Could not load the {what.toLowerCase()}</h2>
      <p>{messageOf(error)}</p>
    </div>
  );
}

export function Loading() {
  return <p class="muted">Loading…</p>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{value === undefined ? '—' : JSON.stringify(value, null, 2)}</pre>;
}

export function PageHeader({ title, children }: { title: ComponentChildren; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{title}</h1>
      <div class="page-actions">{children}</div>
    </div>
  );
}

export function Stat({ label, value, hint, tone }: { label: string; value: ComponentChildren; hint?: string; tone?: 'warn' | 'bad' | 'good' }) {
  return (
    <div class={`stat ${tone ? `stat-${tone}` : ''}`}>
      <div class="stat-value">{value}</div>
      <div class="stat-label" title={hint}>
        {label}
      </div>
    </div>
  );
}
