// Probes. /health and /health/live answer while the process serves requests; /health/ready also proves the
// store answers and that the actor threads have rebuilt the queues they serve (until then a request for a large
// queue would wait for its rebuild). None of them needs a credential or tells the version.
import { ping } from '../../db/sql/ping.js';
import type { Store } from '../../db/store.js';
import type { Route } from '../router.js';
import { Health, Readiness } from '../schemas.js';

/** `loaded`: the actor threads have rebuilt the queues they serve. */
export function healthRoutes(store: Store, loaded: () => boolean): Route[] {
  const ok = () => ({ status: 200, body: { status: 'ok' } });
  return [
    { method: 'GET', path: '/health', permission: null, handler: ok, doc: { operationId: 'getHealth', summary: 'Health check', responses: { 200: { description: 'ok', schema: Health } } } },
    { method: 'GET', path: '/health/live', permission: null, handler: ok, doc: { operationId: 'getLiveness', summary: 'Liveness probe', responses: { 200: { description: 'ok', schema: Health } } } },
    {
      method: 'GET',
      path: '/health/ready',
      permission: null,
      doc: {
        operationId: 'getReadiness',
        summary: 'Readiness probe: the store answers and the queues are loaded',
        description: 'A 503 adds checks to the error: {store: "failed"}, or {store: "ok", actors: "loading"} while the queues are rebuilt.',
        responses: { 200: { description: 'ready', schema: Readiness } },
        errors: ['UNAVAILABLE'],
      },
      handler: async () => {
        try {
          await ping(store);
          if (!loaded()) {
            return {
              status: 503,
              body: { error: 'unavailable', code: 'UNAVAILABLE', message: 'the queues are being rebuilt', status: 503, checks: { store: 'ok', actors: 'loading' } },
            };
          }
          return { status: 200, body: { status: 'ready', checks: { store: 'ok' } } };
        } catch (err) {
          return {
            status: 503,
            body: {
              error: 'unavailable',
              code: 'UNAVAILABLE',
              message: `store unreachable: ${(err as Error).message}`,
              status: 503,
              checks: { store: 'failed' },
            },
          };
        }
      },
    },
  ];
}
