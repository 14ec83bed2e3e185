// Route table and matching. A static segment beats a parameter (`/jobs/claim` before `/jobs/:id`); a path
// that exists under another method answers 405 with Allow, and an unknown path 404.
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../../errors.js';
import type { Principal } from '../../app/auth.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Request {
  method: Method;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  authorization: string;
  /** X-Admin-Key, '' when absent: the admin routes check it themselves (they take no Bearer credential). */
  adminKey: string;
  /** X-Webhook-Token, '' when absent: the incoming webhook's credential (its route's `authenticate` reads it). */
  webhookToken: string;
  /** The Host header ('' when absent): webhook URLs are built from it when PUBLIC_URL is not set. */
  host: string;
  body: unknown;
  principal: Principal;
}

export interface Response {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A streamed answer (SSE): the status and headers go out, then `stream` writes the body until either side ends. */
  stream?: (sink: StreamSink) => void;
  /** Runs when the client left before this answer could be written (a long poll given up): undo what it handed out. */
  undelivered?: () => void;
}

/** The body of a streamed answer. Writes are corked; a client that does not read is dropped, not buffered for. */
export interface StreamSink {
  /** Sends a chunk; false when the stream is closed (the chunk is dropped). */
  write(chunk: string): boolean;
  /** Ends the answer; onClose listeners run once, whoever ends it (this call, the client, a slow reader, shutdown). */
  end(): void;
  /** Runs at once when the stream is already closed. */
  onClose(fn: () => void): void;
  readonly closed: boolean;
}

/**
 * What the OpenAPI document says of a route (openapi.ts); schemas are the typebox schemas the route validates
 * with, response schemas those of schemas.ts (a schema with an `$id` becomes a shared component).
 */
export interface RouteDoc {
  /** camelCase and unique: generated clients name their methods after it, so it never changes with the path. */
  operationId: string;
  summary: string;
  description?: string;
  /** Required in the document when `{}` (what an empty body is taken for) does not pass it. */
  body?: TSchema;
  query?: Record<string, { schema: TSchema; description?: string; required?: boolean }>;
  /** Success status → what comes back: JSON (`schema`), or another media type. */
  responses: Record<number, { description: string; schema?: TSchema; mediaType?: string; headers?: Record<string, string> }>;
  /** Catalog errors the route raises itself, beyond those openapi.ts lists for every route of its kind. */
  errors?: ErrorCode[];
  /** A credential other than the Bearer one of `permission` (alternatives; 'none': it may be left out). */
  security?: Array<'adminKey' | 'webhookToken' | 'metricsToken' | 'none'>;
}

export interface Route {
  method: Method;
  path: string;
  /** null: public (health probes). Otherwise the permission a credential needs ('*' grants all). */
  permission: string | null;
  /**
   * A route with permission null that takes a credential of its own instead of Bearer (the incoming webhook's
   * X-Webhook-Token): it resolves the principal or throws 401, and the principal is then rate-limited and
   * counted like a Bearer one.
   */
  authenticate?: (req: Request) => Promise<Principal>;
  handler: (req: Request) => Promise<Response> | Response;
  doc?: RouteDoc;
  /** The real-time routes only (SPEC Authentication 3): the credential may come as `api_key` or `token` in the query. */
  queryCredential?: boolean;
}

interface Compiled {
  route: Route;
  segments: string[];
  specificity: number;
}

export type Match = { route: Route; params: Record<string, string> } | { allow: Method[] } | null;

export class Router {
  private readonly routes: Compiled[] = [];

  add(...routes: Route[]): this {
    for (const route of routes) {
      const segments = route.path.split('/').filter(Boolean);
      // Static segments weigh by position so that the leftmost difference decides.
      const specificity = segments.reduce((s, seg, i) => s + (seg.startsWith(':') ? 0 : 2 ** (16 - i)), 0);
      this.routes.push({ route, segments, specificity });
    }
    this.routes.sort((a, b) => b.specificity - a.specificity);
    return this;
  }

  match(method: string, path: string): Match {
    const parts = path.split('/').filter(Boolean);
    const allow = new Set<Method>();
    // The most specific path that matches decides: GET /jobs/claim is a 405 of /jobs/claim, not /jobs/:id.
    let decided = -1;
    for (const c of this.routes) {
      if (decided >= 0 && c.specificity < decided) break;
      if (c.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let hit = true;
      for (let i = 0; i < parts.length; i++) {
        const seg = c.segments[i]!;
        if (seg.startsWith(':')) params[seg.slice(1)] = safeDecode(parts[i]!);
        else if (seg !== parts[i]) {
          hit = false;
          break;
        }
      }
      if (!hit) continue;
      if (c.route.method === method) return { route: c.route, params };
      allow.add(c.route.method);
      decided = c.specificity;
    }
    return allow.size > 0 ? { allow: [...allow] } : null;
  }

  list(): Route[] {
    return this.routes.map((c) => c.route);
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
