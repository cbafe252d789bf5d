/**
 * `suspicious_uri` detection over a window's totals (all instances, all ticks). Defaults,
 * learned from CrowdSec's http-sensitive-files / http-probing / http-crawl-non_statics
 * scenarios and tuned to be quiet on ordinary visitors:
 * - at least `minSuspiciousHits` (3) requests matching a suspicious-URI list, or
 * - at least `minRequests` (10) non-static requests over at least `minDistinctPaths` (10)
 *   distinct paths with an error ratio (errors / non-static requests) of at least
 *   `minErrorRatio` (0.6): path probing that mostly misses.
 */
import { createHash } from 'node:crypto'
import type { Signal } from '@gatehouse/kit'
import type { Thresholds } from './thresholds.ts'

export { DEFAULT_THRESHOLDS, type Thresholds } from './thresholds.ts'

export interface Totals {
  requests: number
  errors: number
  successes: number
  nonStatic: number
  suspicious: number
  distinctPaths: number
}

export function isScanner(t: Totals, th: Thresholds): boolean {
  if (t.suspicious >= th.minSuspiciousHits) return true
  return (
    t.nonStatic >= th.minRequests &&
    t.distinctPaths >= th.minDistinctPaths &&
    t.errors / t.nonStatic >= th.minErrorRatio
  )
}

/**
 * Deterministic over the aggregate's identity (host, site, IP, window, trigger): a signal
 * republished after a restart or failover carries the same id, so the control plane's
 * (node, event_id) deduplication holds. Prefixed `ws-` so another producer does not share it.
 */
export function eventId(host: string, site: string, ip: string, windowStart: number, trigger: string): string {
  const h = createHash('sha256').update(`${host}\n${site}\n${ip}\n${windowStart}\n${trigger}`).digest('hex')
  return `ws-${h.slice(0, 40)}`
}

export function buildSignal(
  k: { host: string; site: string; ip: string; windowStart: number },
  t: Totals,
  observedMs: number,
  windowMs: number,
): Signal {
  return {
    event_id: eventId(k.host, k.site, k.ip, k.windowStart, 'suspicious_uri'),
    observed_at: new Date(observedMs).toISOString(),
    host: k.host,
    site: k.site,
    ip: k.ip,
    trigger: 'suspicious_uri',
    connections: t.requests,
    errors: t.errors,
    successes: t.successes,
    window_seconds: Math.round(windowMs / 1000),
  }
}
