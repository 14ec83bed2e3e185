// The OpenAPI 3.1 document, generated from the router: every registered route, its permission, and the
// typebox schemas it validates with and answers (typebox schemas are JSON Schema, which OpenAPI 3.1 embeds as
// is). A schema with an `$id` is written once under components.schemas and referenced from every use.
// Served at /api/v1/openapi.json; test/openapi.test.ts checks it route by route, lints it (Redocly) and
// validates live answers against it.
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { CATALOG, type ErrorCode } from '../../errors.js';
import { ANY_CREDENTIAL } from '../../app/auth.js';
import type { Route } from './router.js';
import { ErrorBody } from './schemas.js';

type Json = Record<string, unknown>;

const SECURITY_SCHEMES = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (svc_live_… / svc_test_…) or a JWT access token (eyJ…) from /api/v1/auth/login',
  },
  adminKey: { type: 'apiKey', in: 'header', name: 'X-Admin-Key', description: 'ADMIN_API_KEY of the service (admin routes)' },
  webhookToken: { type: 'apiKey', in: 'header', name: 'X-Webhook-Token', description: 'The organization’s incoming-webhook token' },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when the service sets one' },
};

/**
 * The catalog errors a route can answer: those of every request (a malformed head, a credential in the query
 * string, a NUL in a parameter), of every request with a body (the body ceiling, JSON), of a path with
 * parameters (nothing there), of a credential (refused, rate limit, the store behind it), then the route's own.
 */
function errorCodes(route: Route): ErrorCode[] {
  const codes = new Set<ErrorCode>(['BAD_REQUEST', 'UNAUTHORIZED', 'URI_TOO_LONG', 'VALIDATION_ERROR', 'HEADERS_TOO_LARGE', 'INTERNAL']);
  if (route.method !== 'GET') codes.add('PAYLOAD_TOO_LARGE');
  if (route.path.includes('/:')) codes.add('NOT_FOUND');
  if (route.permission !== null || route.authenticate) {
    codes.add('RATE_LIMITED');
    codes.add('UNAVAILABLE');
  }
  if (route.permission !== null && route.permission !== ANY_CREDENTIAL) codes.add('FORBIDDEN');
  for (const code of route.doc?.errors ?? []) codes.add(code);
  return [...codes];
}

/**
 * The error responses of a route, by status: references to components.responses, one per set of catalog codes
 * (named after them: `ConflictOrLeaseExpired`), so that the document states each set once.
 */
function errorResponses(route: Route, shared: Json): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodes(route)) {
    const status = CATALOG[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Json = {};
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const order = Object.keys(CATALOG);
    const codes = byStatus.get(status)!.sort((a, b) => order.indexOf(a) - order.indexOf(b));
    const name = codes.map((c) => c.toLowerCase().replace(/(^|_)(\w)/g, (_, __, ch: string) => ch.toUpperCase())).join('Or');
    shared[name] ??= {
      description: codes.map((c) => `${c}: ${CATALOG[c].message}`).join('; '),
      ...(codes.includes('RATE_LIMITED')
        ? { headers: { 'Retry-After': { description: 'seconds to wait (RATE_LIMITED)', schema: { type: 'integer' } } } }
        : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
    out[status] = { $ref: `#/components/responses/${name}` };
  }
  return out;
}

/**
 * A JSON copy of a typebox schema for the document: sub-schemas with an `$id` are moved to `components` and
 * referenced, and a Record (typebox writes `patternProperties: {'^.*$': …}`) becomes `additionalProperties`, which
 * code generators understand. Typebox's symbol keys are left behind.
 */
function place(schema: unknown, components: Map<string, string>, out: Json): unknown {
  if (Array.isArray(schema)) return schema.map((s) => place(s, components, out));
  if (schema === null || typeof schema !== 'object') return schema;
  const s = schema as Json;
  if (typeof s.$id === 'string') {
    const name = s.$id;
    const { $id: _, ...rest } = s;
    const body = place(rest, components, out);
    const text = JSON.stringify(body);
    const known = components.get(name);
    if (known === undefined) {
      components.set(name, text);
      out[name] = body;
    } else if (known !== text) {
      throw new Error(`Two different schemas are named ${name}`);
    }
    return { $ref: `#/components/schemas/${name}` };
  }
  const copy: Json = {};
  for (const [k, v] of Object.entries(s)) copy[k] = place(v, components, out);
  const pattern = copy.patternProperties as Json | undefined;
  if (pattern && Object.keys(pattern).length === 1 && '^.*$' in pattern && copy.additionalProperties === undefined) {
    delete copy.patternProperties;
    copy.additionalProperties = pattern['^.*$'];
  }
  return copy;
}

export function openApiDocument(routes: Route[], version: string): Json {
  const names = new Map<string, string>();
  const schemas: Json = {};
  const json = (s: TSchema) => place(s, names, schemas);
  json(ErrorBody);
  const paths: Record<string, Json> = {};
  const errors: Json = {};
  const operationIds = new Set<string>();
  for (const route of routes) {
    const doc = route.doc;
    if (!doc) throw new Error(`${route.method} ${route.path} has no doc`);
    if (operationIds.has(doc.operationId)) throw new Error(`operationId ${doc.operationId} is used twice`);
    operationIds.add(doc.operationId);
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const parameters = [
      ...[...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
      ...Object.entries(doc.query ?? {}).map(([name, q]) => ({
        name,
        in: 'query',
        required: q.required ?? false,
        ...(q.description ? { description: q.description } : {}),
        schema: json(q.schema),
      })),
    ];
    const responses: Json = {};
    for (const [status, r] of Object.entries(doc.responses)) {
      const headers = Object.entries(r.headers ?? {}).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }]);
      responses[status] = {
        description: r.description,
        ...(headers.length > 0 ? { headers: Object.fromEntries(headers) } : {}),
        ...(r.schema ? { content: { [r.mediaType ?? 'application/json']: { schema: json(r.schema) } } } : {}),
      };
    }
    Object.assign(responses, errorResponses(route, errors));
    const security =
      route.permission !== null
        ? [{ bearer: [] }]
        : (doc.security ?? []).map((name) => (name === 'none' ? {} : { [name]: [] }));
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      operationId: doc.operationId,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      tags: [tagOf(route.path)],
      security,
      'x-permission': route.permission,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(doc.body
        ? { requestBody: { required: !Value.Check(doc.body, {}), content: { 'application/json': { schema: json(doc.body) } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version,
      description:
        'Multi-tenant job queue. Errors: docs/errors.md (every error answers the Error schema). Credentials: Authorization: Bearer <API key or access token>; admin routes: X-Admin-Key.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'this node' }],
    tags: TAGS,
    components: { securitySchemes: SECURITY_SCHEMES, schemas: sortKeys(schemas), responses: sortKeys(errors) },
    paths,
  };
}

const TAGS = [
  { name: 'jobs', description: 'Enqueue, claim, complete and inspect jobs; the dead-letter queue' },
  { name: 'queues', description: 'Queues: create, pause, configure, statistics' },
  { name: 'workers', description: 'Worker registration and heartbeats' },
  { name: 'schedules', description: 'Cron schedules and their runs' },
  { name: 'workflows', description: 'Dependency graphs of jobs' },
  { name: 'outgoing-webhooks', description: 'Endpoints the service delivers events to' },
  { name: 'webhooks', description: 'Incoming webhooks: jobs from other services' },
  { name: 'api-keys', description: 'API keys of the organization' },
  { name: 'auth', description: 'Sessions: tokens from an API key or an email code' },
  { name: 'organizations', description: 'Registration, usage, the incoming-webhook token' },
  { name: 'admin', description: 'Operator routes (X-Admin-Key)' },
  { name: 'events', description: 'Server-Sent Events and the WebSocket' },
  { name: 'system', description: 'Probes, metrics, this document, the dashboard' },
];

/** The tag of a path: its family under /api/v1 (the admin routes together), or system. */
function tagOf(path: string): string {
  const family = path === '/api/v1/ws' ? 'events' : path.startsWith('/api/v1/') ? path.split('/')[3]! : 'system';
  return TAGS.some((t) => t.name === family) ? family : 'system';
}

function sortKeys(o: Json): Json {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}
