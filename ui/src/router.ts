// Hash routes (#/jobs/<id>?…): the server serves one page at /ui, and a link to any view can be shared
// without the server knowing the dashboard's routes.
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  path: string[];
  query: URLSearchParams;
}

function parse(): Route {
  const hash = location.hash.replace(/^#/, '') || '/';
  const q = hash.indexOf('?');
  const path = (q < 0 ? hash : hash.slice(0, q)).split('/').filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  return { path, query: new URLSearchParams(q < 0 ? '' : hash.slice(q + 1)) };
}

export function useRoute(): Route {
  const [route, set] = useState(parse);
  useEffect(() => {
    const on = () => set(parse());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

type Query = URLSearchParams | Record<string, string | null | undefined>;

export function href(path: string, query?: Query): string {
  const q = query instanceof URLSearchParams ? new URLSearchParams(query) : new URLSearchParams();
  if (query && !(query instanceof URLSearchParams)) for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const qs = q.toString();
  return `#${path}${qs ? `?${qs}` : ''}`;
}

export function navigate(path: string, query?: Query): void {
  location.hash = href(path, query);
}
