// autocannon ships no types and @types/autocannon would be one more dependency for the few fields used here.
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
    total: number;
  }
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    timeout?: number;
    idReplacement?: boolean;
    /** Requests per second over all connections (open loop at that rate). */
    overallRate?: number;
    /** Per-request overrides; setupRequest may rewrite each request (a body per request). */
    requests?: Array<{ setupRequest?: (req: { method?: string; path?: string; headers?: Record<string, string>; body?: string }) => object }>;
  }
  export interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    duration: number;
    start: Date;
    finish: Date;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    /** Answers by status code. */
    statusCodeStats?: Record<string, { count: number }>;
  }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
