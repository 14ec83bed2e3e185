// GET /metrics: the Prometheus text format. Open unless METRICS_TOKEN is set; then it needs
// `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time). API keys do not open it: metrics are the
// operator's, not a tenant's, and name no organization, queue, job or worker.
//
// GET /api/v1/metrics: a tenant's own view, per queue (the queue label is allowed there), authenticated and
// rate-limited like any API route: the gauges, and the job histograms and counters asked of each queue's owner.
import { createHash, timingSafeEqual } from 'node:crypto';
import Type from 'typebox';
import type { Config } from '../../../config.js';
import { AppError } from '../../../errors.js';
import { MAX_REPORTED_QUEUES, type Metrics } from '../../../app/metrics.js';
import type { Route } from '../router.js';

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export function metricsRoutes(config: Pick<Config, 'metricsToken'>, metrics: Metrics): Route[] {
  const token = config.metricsToken;
  return [
    {
      method: 'GET',
      path: '/metrics',
      permission: null,
      handler: async (req) => {
        if (token !== null) {
          const m = /^Bearer\s+(\S+)\s*$/i.exec(req.authorization);
          if (!m || !timingSafeEqual(digest(m[1]!), digest(token))) throw new AppError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
        }
        return { status: 200, body: await metrics.render(), headers: { 'content-type': metrics.contentType } };
      },
      doc: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (open unless METRICS_TOKEN is set)',
        responses: { 200: { description: 'Prometheus text exposition format', mediaType: 'text/plain', schema: Type.String() } },
        security: ['none', 'metricsToken'],
      },
    },
    {
      method: 'GET',
      path: '/api/v1/metrics',
      permission: 'queues:read',
      handler: async (req) => ({
        status: 200,
        body: await metrics.renderOrganization(req.principal.organizationId),
        headers: { 'content-type': metrics.contentType },
      }),
      doc: {
        operationId: 'getOrganizationMetrics',
        summary: "The organization's queue metrics in the Prometheus text format",
        description:
          `Per queue (label \`queue\`): sluice_jobs{state} (pending, blocked, scheduled, processing, deadletter), ` +
          `sluice_oldest_pending_job_age_seconds and sluice_queue_paused; and the job series of GET /metrics for that ` +
          `queue: sluice_job_events_total{event}, the histograms sluice_job_wait_seconds and ` +
          `sluice_job_run_seconds{outcome}, sluice_job_retries_total{reason}, sluice_job_dead_letters_total{reason}, ` +
          `sluice_job_lease_expiries_total, sluice_job_cancellations_total and sluice_queue_events_total{event}, counted ` +
          `since the queue's current owner node began serving it (they start again at 0 after a move or a restart). ` +
          `sluice_queues counts all the queues. At most ${MAX_REPORTED_QUEUES} queues are reported, those with the most ` +
          `unfinished jobs first.`,
        responses: { 200: { description: 'Prometheus text exposition format', mediaType: 'text/plain', schema: Type.String() } },
      },
    },
  ];
}
