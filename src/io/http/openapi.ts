// The OpenAPI 3.1 document, generated from the router: every registered route, its permission, and the
// typebox schemas it validates with (typebox schemas are JSON Schema, which OpenAPI 3.1 embeds as is).
// Served at /api/v1/openapi.json; test/openapi.test.ts checks that no route is missing from it.
import { CATALOG } from '../../errors.js';
import type { Route } from './router.js';
import { ErrorBody } from './schemas.js';

const errorRef = { $ref: '#/components/schemas/Error' };

function errorResponses(route: Route): Record<string, unknown> {
  const codes = new Set<number>([CATALOG.INTERNAL.status]);
  if (route.authenticate) codes.add(CATALOG.UNAUTHORIZED.status);
  if (route.permission !== null) {
    codes.add(CATALOG.UNAUTHORIZED.status);
    codes.add(CATALOG.FORBIDDEN.status);
    codes.add(CATALOG.UNAVAILABLE.status);
  }
  if (route.doc?.body || route.doc?.query) codes.add(CATALOG.VALIDATION_ERROR.status);
  if (route.path.includes('/:')) codes.add(CATALOG.NOT_FOUND.status);
  const out: Record<string, unknown> = {};
  for (const status of [...codes].sort()) {
    const names = Object.entries(CATALOG)
      .filter(([, e]) => e.status === status)
      .map(([code]) => code);
    out[status] = { description: names.join(' | '), content: { 'application/json': { schema: errorRef } } };
  }
  return out;
}

export function openApiDocument(routes: Route[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    const doc = route.doc;
    const parameters = [
      ...[...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })),
      ...Object.entries(doc?.query ?? {}).map(([name, q]) => ({
        name,
        in: 'query',
        required: q.required ?? false,
        description: q.description,
        schema: q.schema,
      })),
    ];
    const responses: Record<string, unknown> = {};
    for (const [status, r] of Object.entries(doc?.responses ?? { 200: { description: 'OK' } })) {
      responses[status] = {
        description: r.description,
        ...(r.headers ? { headers: Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, { description: d, schema: { type: 'string' } }])) } : {}),
        ...(r.schema ? { content: { 'application/json': { schema: r.schema } } } : {}),
      };
    }
    Object.assign(responses, errorResponses(route));
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      summary: doc?.summary ?? `${route.method} ${route.path}`,
      ...(doc?.description ? { description: doc.description } : {}),
      tags: [route.path.split('/')[3] ?? 'system'],
      security: route.permission === null ? [] : [{ bearer: [] }],
      'x-permission': route.permission,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(doc?.body ? { requestBody: { required: false, content: { 'application/json': { schema: doc.body } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version,
      description: 'Multi-tenant job queue. Errors: docs/errors.md. Credentials: Authorization: Bearer <API key or access token>; admin routes: X-Admin-Key.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key (svc_live_… / svc_test_…) or a JWT access token (eyJ…) from /api/v1/auth/login' } },
      schemas: { Error: ErrorBody },
    },
    paths,
  };
}
