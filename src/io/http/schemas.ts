// Response shapes, for the OpenAPI document. Request schemas live with their routes (the validators).
import Type from 'typebox';

/**
 * Any JSON object (payloads, templates, metadata). Not Type.Record(String, Unknown): typebox checks a Record key
 * by key against a pattern (150 ms for 90,000 keys here), while an object type with no declared properties is a
 * constant-time check.
 */
export const JsonObject = Type.Unsafe<Record<string, unknown>>(Type.Object({}, { additionalProperties: true, description: 'any JSON object' }));

const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
export const JobStatus = Type.Union(
  ['pending', 'scheduled', 'processing', 'completed', 'deadletter', 'cancelled'].map((s) => Type.Literal(s)),
);

export const ErrorBody = Type.Object({
  error: Type.String({ description: 'lower_snake identifier, e.g. validation_error' }),
  code: Type.String({ description: 'UPPER_SNAKE code from the catalog (docs/errors.md)' }),
  message: Type.String(),
  status: Type.Integer({ description: 'the HTTP status' }),
  details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
});

export const Job = Type.Object({
  id: Type.String({ format: 'uuid', description: 'UUIDv7: ordered by creation' }),
  organization_id: Type.String({ format: 'uuid' }),
  queue_name: Type.String(),
  status: JobStatus,
  payload: JsonObject,
  result: Type.Unknown(),
  priority: Type.Integer({ minimum: -100, maximum: 100 }),
  retry_count: Type.Integer(),
  max_retries: Type.Integer(),
  last_error: Type.Union([Type.String(), Type.Null()]),
  errors: Type.Array(Type.Object({ attempt: Type.Integer(), error: Type.String(), at: Type.String({ format: 'date-time' }) })),
  tags: Type.Record(Type.String(), Type.String()),
  idempotency_key: Type.Union([Type.String(), Type.Null()]),
  timeout_seconds: Type.Integer(),
  assigned_worker_id: Type.Union([Type.String(), Type.Null()]),
  lease_id: Type.Union([Type.String(), Type.Null()], { description: 'set while processing; echo it on complete/fail/heartbeat' }),
  workflow_id: Type.Union([Type.String(), Type.Null()]),
  dependencies_met: Type.Boolean(),
  completion_webhook: Type.Union([Type.String(), Type.Null()]),
  scheduled_at: Time,
  created_at: Type.String({ format: 'date-time' }),
  started_at: Time,
  completed_at: Time,
  updated_at: Type.String({ format: 'date-time' }),
  lease_expires_at: Time,
});

export const CreatedJob = Type.Intersect([Job, Type.Object({ created: Type.Boolean() })]);

export const Queue = Type.Object({
  name: Type.String(),
  paused: Type.Boolean(),
  paused_reason: Type.Union([Type.String(), Type.Null()]),
  config: Type.Object({
    max_retries: Type.Union([Type.Integer(), Type.Null()]),
    lease_duration_secs: Type.Union([Type.Integer(), Type.Null()]),
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
