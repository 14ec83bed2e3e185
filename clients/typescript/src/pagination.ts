// Cursor pages. Every list of the service answers a JSON array and, when there is more, the cursor of the
// next page in `X-Next-Cursor` (absent on the last page). A Paginator fetches lazily: iterating it walks
// every item of every page; `page()` fetches one page; `pages()` walks page by page.

export interface Page<T> {
  items: T[];
  /** Cursor of the next page; null on the last page. */
  nextCursor: string | null;
}

export type PageFetcher<T> = (cursor: string | undefined, signal: AbortSignal | undefined) => Promise<Page<T>>;

export class Paginator<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: PageFetcher<T>,
    private readonly startCursor?: string,
    private readonly signal?: AbortSignal,
  ) {}

  /** One page: the first one, or the one after `cursor`. */
  page(cursor: string | undefined = this.startCursor): Promise<Page<T>> {
    return this.fetchPage(cursor, this.signal);
  }

  /** Every page in turn, until the last. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor;
    for (;;) {
      const page = await this.fetchPage(cursor, this.signal);
      yield page;
      if (page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item, up to `max` (default: all of them). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}
