// GET /api/v1/dashboard (REST adapter): the organization's overview as JSON (src/app/dashboard.ts). Not the
// dashboard's web pages, which are ui.ts and read the other routes.
import type { App } from '../../../app/app.js';
import { isoOf } from '../../present.js';
import type { Request, Response, Route } from '../router.js';
import { DashboardOverview } from '../schemas.js';

export function dashboardRoutes(app: App): Route[] {
  const overview = async (req: Request): Promise<Response> => {
    const o = await app.dashboard.overview(req.principal.organizationId);
    return { status: 200, body: { ...o, started_at: isoOf(o.started_at), at: isoOf(o.at) } };
  };
  return [
    {
      method: 'GET',
      path: '/api/v1/dashboard',
      permission: 'jobs:read',
      handler: overview,
      doc: {
        operationId: 'getDashboardOverview',
        summary: "An overview of the caller's organization: version, uptime, store, jobs, queues, workers",
        description:
          'Job counts by status; completed (completed_24h), dead-lettered (failed_24h) and failed attempts over the last 24 h, with the average ' +
          'wait (due → claimed) and processing (claimed → completed) times; up to 20 queues by name with their counts; registered workers, ' +
          'healthy when they heartbeated within two heartbeat intervals (docs/api.md, "Dashboard overview").',
        responses: { 200: { description: 'The overview', schema: DashboardOverview } },
      },
    },
  ];
}
