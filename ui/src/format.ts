// How times, durations and ids read on screen.

/** "12 s", "4 min", "3 h", "2 d". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60 ? `${s % 60} s` : ''}`.trim();
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** "5 s ago" or "in 3 min", from an ISO time and the page's clock. */
export function relative(iso: string | null | undefined, now: number): string {
  if (!iso) return '—';
  const diff = (Date.parse(iso) - now) / 1000;
  if (Number.isNaN(diff)) return '—';
  if (Math.abs(diff) < 1) return 'now';
  return diff < 0 ? `${duration(-diff)} ago` : `in ${duration(diff)}`;
}

/** Local date and time, to the second. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '—' : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

/** The last 8 hex digits of a UUID: random in a UUIDv7, whose leading digits are a timestamp shared by jobs made
 *  together. The full id is in the link and its title. */
export const shortId = (id: string): string => id.slice(-8);

export const count = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : n.toLocaleString());
