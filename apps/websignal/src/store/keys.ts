/**
 * Key layout in the shared store. Every key carries a Redis Cluster hash tag (`{...}`):
 * the publisher's keys (schema, lease, epoch, outboxes) share the namespace's tag so their
 * scripts touch one slot; each aggregate's two keys share a tag of their own, spreading
 * aggregates over the cluster. No key or value holds a request target or user agent.
 */
export const SCHEMA_VERSION = '1'

export interface Keys {
  schema: string
  lease: string
  epoch: string
  outbox: string
  outboxData: string
  sent: string
  analyticsOutbox: string
  analyticsData: string
  aggregate(host: string, site: string, ip: string, windowStart: number): { counts: string; paths: string }
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
    aggregate(host, site, ip, windowStart) {
      const tag = `{${namespace}|${host}|${site}|${ip}|${windowStart}}`
      return { counts: `ws:agg:${tag}`, paths: `ws:paths:${tag}` }
    },
  }
}
