/**
 * Key layout in the shared store. Every key carries a Redis Cluster hash tag (`{...}`):
 * the publisher's keys (schema, lease, epoch, outboxes) share the namespace's tag so their
 * scripts touch one slot. Aggregates are grouped in buckets: (host, site, window) and a hash of
 * the IP modulo `AGGREGATE_BUCKETS`; a bucket's counters hash and its per-IP distinct-path
 * HyperLogLogs share one tag, so one script call flushes a whole bucket (many IPs) and the
 * buckets spread over a cluster. No key or value holds a request target or user agent.
 */
export const SCHEMA_VERSION = '1'

/** Buckets per (host, site, window): enough to spread a busy window over a cluster. */
export const AGGREGATE_BUCKETS = 16

export interface Keys {
  schema: string
  lease: string
  epoch: string
  outbox: string
  outboxData: string
  sent: string
  analyticsOutbox: string
  analyticsData: string
  /** The bucket of an aggregate: its counters hash and the prefix of its per-IP HyperLogLogs (`<prefix><ip>`). */
  bucket(host: string, site: string, windowStart: number, bucket: number): { counts: string; pathsPrefix: string }
}

export function keysFor(namespace: string): Keys {
  const p = `ws:{${namespace}}`
  return {
    schema: `${p}:schema`,
    lease: `${p}:lease`,
    epoch: `${p}:epoch`,
    outbox: `${p}:outbox`,
    outboxData: `${p}:outbox:data`,
    sent: `${p}:sent`,
    analyticsOutbox: `${p}:analytics`,
    analyticsData: `${p}:analytics:data`,
    bucket(host, site, windowStart, bucket) {
      const tag = `{${namespace}|${host}|${site}|${windowStart}|${bucket}}`
      return { counts: `ws:agg:${tag}`, pathsPrefix: `ws:paths:${tag}:` }
    },
  }
}
