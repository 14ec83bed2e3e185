// What the CLI prints: aligned tables and key/value blocks for people, JSON for scripts, and a progress bar
// on stderr that only draws when stderr is a terminal (so pipes and CI logs stay clean).

export interface Out {
  write(s: string): void;
}

export type Cell = string | number | boolean | null | undefined;

export function cell(v: Cell): string {
  if (v === null || v === undefined) return '-';
  return String(v).replace(/[\r\n\t]+/g, ' ');
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(headers: string[], rows: Cell[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

/** `key  value` lines; nested objects as JSON. */
export function keyValues(o: Record<string, unknown>): string {
  const keys = Object.keys(o);
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `${k.padEnd(width)}  ${render(o[k])}`).join('\n') + '\n';
}

function render(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

export function truncate(s: string | null | undefined, max: number): string {
  if (!s) return '-';
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** `2030-01-01T12:00:00.000Z` → `2030-01-01 12:00:00` (UTC, as the service gives it). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '-';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace(/Z$/, '');
}

export class Progress {
  private done = 0;
  private lastDraw = 0;
  private readonly started = Date.now();
  private drawn = false;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly label: string,
    private total: number | null,
    private readonly enabled = stream.isTTY === true,
  ) {}

  /** Moves the bar to `done` (out of `total`, when known). */
  update(done: number, total: number | null = this.total): void {
    this.done = done;
    this.total = total;
    const now = Date.now();
    if (!this.enabled || now - this.lastDraw < 80) return;
    this.lastDraw = now;
    this.draw();
  }

  private draw(): void {
    const secs = Math.max(0.001, (Date.now() - this.started) / 1000);
    const rate = `${Math.round(this.done / secs)}/s`;
    let line: string;
    if (this.total !== null && this.total > 0) {
      const f = Math.min(1, this.done / this.total);
      const width = 24;
      const full = Math.round(f * width);
      line = `${this.label} [${'#'.repeat(full)}${'-'.repeat(width - full)}] ${this.done}/${this.total} ${Math.floor(f * 100)}% ${rate}`;
    } else {
      line = `${this.label} ${this.done} ${rate}`;
    }
    this.stream.write(`\r${line}\x1b[K`);
    this.drawn = true;
  }

  /** Clears the bar (the caller prints its own summary). */
  finish(): void {
    if (!this.enabled) return;
    if (this.drawn) this.stream.write('\r\x1b[K');
  }
}
