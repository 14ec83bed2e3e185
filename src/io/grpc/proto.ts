// The contract (proto/queue/v1/queue.proto) loaded at run time, and the conversions between JSON values and
// google.protobuf.Struct / Value, which proto-loader hands over as plain objects ({fields: {k: {stringValue}}}).
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export const PROTO_PATH = fileURLToPath(new URL('../../../proto/queue/v1/queue.proto', import.meta.url));

/**
 * The options of server and tests alike: camelCase names, int64 as strings (DESIGN §4), enums by name, absent
 * scalars as their zero value, and the case of a oneof under `kind` / `reply`.
 */
export const LOADER_OPTIONS = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true } as const;

export interface QueueV1 {
  QueueService: ServiceClientConstructor;
  WorkerService: ServiceClientConstructor;
}

export function loadQueueV1(): QueueV1 {
  const root = loadPackageDefinition(loadSync(PROTO_PATH, LOADER_OPTIONS)) as GrpcObject;
  return (root.queue as GrpcObject).v1 as unknown as QueueV1;
}

/** A google.protobuf.Value as proto-loader reads and writes it. */
export interface PbValue {
  kind?: string;
  nullValue?: string | number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: PbStruct;
  listValue?: { values?: PbValue[] };
}

export interface PbStruct {
  fields?: Record<string, PbValue>;
}

export function toValue(v: unknown): PbValue {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v as Record<string, unknown>) };
}

/**
 * Sets an own property, `__proto__` included (an assignment would set the prototype instead): what
 * Object.fromEntries does, without its array per entry (these run for every field of every job on a stream).
 */
function own(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

export function toStruct(o: Record<string, unknown>): PbStruct {
  const fields: Record<string, PbValue> = {};
  for (const k of Object.keys(o)) own(fields, k, toValue(o[k]));
  return { fields };
}

export function fromValue(v: PbValue | null | undefined): unknown {
  if (!v) return null;
  switch (v.kind ?? Object.keys(v).find((k) => (v as Record<string, unknown>)[k] !== undefined)) {
    case 'numberValue':
      return v.numberValue;
    case 'stringValue':
      return v.stringValue;
    case 'boolValue':
      return v.boolValue;
    case 'structValue':
      return fromStruct(v.structValue);
    case 'listValue':
      return (v.listValue?.values ?? []).map(fromValue);
    default:
      return null;
  }
}

export function fromStruct(s: PbStruct | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const fields = s?.fields;
  if (fields) for (const k of Object.keys(fields)) own(out, k, fromValue(fields[k]));
  return out;
}
