// A binary min-heap under a caller's ordering. Entries are never removed from the middle: owners mark them
// stale and skip them when they surface (lazy deletion), which keeps every operation O(log n).

export class Heap<T> {
  private readonly items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    // Sifts a hole up rather than swapping: a destructuring swap allocated an array per step (5-6 % of the node's
    // allocations in the SDK worker benchmark).
    const a = this.items;
    let i = a.length;
    a.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = a[parent]!;
      if (!this.before(item, p)) break;
      a[i] = p;
      i = parent;
    }
    a[i] = item;
  }

  pop(): T | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    const n = a.length;
    if (n > 0) {
      // The last item sinks from the root through a hole, as in push.
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && this.before(a[r]!, a[l]!) ? r : l;
        const child = a[c]!;
        if (!this.before(child, last)) break;
        a[i] = child;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}
