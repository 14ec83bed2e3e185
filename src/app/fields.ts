// The fields several operations share: their schemas (typebox: validators at the edges, JSON Schema in the
// OpenAPI document) and the checks of identifiers given in paths and queries.
import Type from 'typebox';
import { notFound, validationError } from '../errors.js';

/** Queue names: 1–100 chars of A-Z a-z 0-9 . _ -, not starting with . or - (DESIGN §4). */
export const QUEUE_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;
export const QueueName = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]*$' });
export const queueNameValid = (name: string): boolean => QUEUE_NAME_PATTERN.test(name);

/** The one UUID pattern: ids are minted lowercase; any case is accepted from clients. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_PATTERN.test(s);
export const Uuid = Type.String({ minLength: 36, maxLength: 36, pattern: UUID_PATTERN.source.replace(/\[0-9a-f\]/g, '[0-9a-fA-F]') });

/** An id given in a path, lowercased, or 404 naming `what`: a string that is not a UUID names nothing. */
export function idOf(what: string, id: string): string {
  if (!UUID_PATTERN.test(id)) throw notFound(what);
  return id.toLowerCase();
}

export const WORKER_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
export const WorkerId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._-]+$' });
export const LeaseId = Type.String({ minLength: 1, maxLength: 100 });
export const LeaseSecs = Type.Integer({ minimum: 5, maximum: 3600 });
export const Priority = Type.Integer({ minimum: -100, maximum: 100 });
export const MaxRetries = Type.Integer({ minimum: 0, maximum: 100 });

/** A job's tags: at most this many (an object's keys or a list's items), names of 1–100 characters. */
export const TAGS_MAX = 50;
const TagName = Type.String({ minLength: 1, maxLength: 100 });
/**
 * Tags as an object of name → value. typebox does not check a Record's key schema (it becomes the pattern
 * `^.*$`), so the names' length is stated in `propertyNames`, which the validator checks with `maxProperties`
 * before anything else (src/io/validate.ts): listing the errors of 50,000 keys would cost the thread a second.
 */
export const TagMap = Type.Record(TagName, Type.String({ maxLength: 256 }), { maxProperties: TAGS_MAX, propertyNames: TagName });
export const TagList = Type.Array(TagName, { maxItems: TAGS_MAX });

/**
 * Any JSON object (payloads, templates, metadata). Not Type.Record(String, Unknown): typebox checks a Record key
 * by key against a pattern (150 ms for 90,000 keys here), while an object type with no declared properties is a
 * constant-time check.
 */
export const JsonObject = Type.Unsafe<Record<string, unknown>>(Type.Object({}, { additionalProperties: true, description: 'any JSON object' }));

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** An ISO 8601 instant with a time zone as epoch ms, null when absent, or 422 naming the field. */
export function parseTime(field: string, value: string | null | undefined): number | null {
  if (value === undefined || value === null) return null;
  const t = Date.parse(value);
  if (!ISO_8601.test(value) || Number.isNaN(t) || !calendarDay(value)) {
    throw validationError([{ field, message: 'must be an ISO 8601 timestamp with a time zone' }]);
  }
  return t;
}

/** Date.parse rolls impossible days over (2030-02-30 → March 2); the day must exist in its month. */
function calendarDay(value: string): boolean {
  const [y, m, d] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}
