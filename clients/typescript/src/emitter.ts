// A small typed event emitter. Unlike node:events, an 'error' nobody listens to is written to stderr instead
// of being thrown: a worker's transient claim failure must not crash the process that runs it.

type Listener<A extends unknown[]> = (...args: A) => void;

export class TypedEmitter<E extends { [K in keyof E]: unknown[] }> {
  // Stored untyped: `on` and `emit` are what tie each event to its arguments.
  private readonly listeners = new Map<keyof E, Set<unknown>>();

  on<K extends keyof E>(event: K, fn: Listener<E[K]>): this {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return this;
  }

  off<K extends keyof E>(event: K, fn: Listener<E[K]>): this {
    this.listeners.get(event)?.delete(fn);
    return this;
  }

  once<K extends keyof E>(event: K, fn: Listener<E[K]>): this {
    const wrap = ((...args: E[K]) => {
      this.off(event, wrap);
      fn(...args);
    }) as Listener<E[K]>;
    return this.on(event, wrap);
  }

  listenerCount(event: keyof E): number {
    return this.listeners.get(event)?.size ?? 0;
  }

  protected emit<K extends keyof E>(event: K, ...args: E[K]): boolean {
    const set = this.listeners.get(event);
    if (!set || set.size === 0) {
      if (event === 'error') console.error('[sluice]', ...args);
      return false;
    }
    for (const fn of [...set]) {
      try {
        (fn as Listener<E[K]>)(...args);
      } catch (err) {
        // A throwing listener must not break the worker's bookkeeping.
        if (event !== 'error') this.emit('error' as K, ...([err, `${String(event)} listener`] as unknown as E[K]));
        else console.error('[sluice] error listener threw', err);
      }
    }
    return true;
  }
}
