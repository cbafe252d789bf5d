/**
 * The gate's Prometheus metrics. The route label is the configured listen address; client
 * addresses and fingerprints are never labels.
 */
import type { AppMetrics, Counter, Gauge } from '@gatehouse/kit'

export const RESULTS = [
  'allowed',
  'bypassed',
  'rejected_unknown',
  'rejected_pending',
  'rejected_blocked',
  'ratelimit',
  'overload',
  'backend_error',
  'backend_changed',
  'protocol_error',
  'handshake_timeout',
  'client_closed',
  'store_error',
] as const

export type Result = (typeof RESULTS)[number]

export interface GateMetrics {
  connections: Counter<'route'>
  active: Gauge<'route'>
  results: Counter<'route' | 'result'>
  bytes: Counter<'route' | 'direction'>
}

export function createGateMetrics(metrics: AppMetrics, routes: readonly string[]): GateMetrics {
  const m: GateMetrics = {
    connections: metrics.counter('connections_total', 'TCP connections accepted', ['route']),
    active: metrics.gauge('active_connections', 'Connections open now (handshake or relay)', ['route']),
    results: metrics.counter('connection_results_total', 'How connections ended up, by result', ['route', 'result']),
    bytes: metrics.counter('proxied_bytes_total', 'Bytes relayed between clients and the backend', [
      'route',
      'direction',
    ]),
  }
  // Start every series at zero so dashboards see them before the first event.
  for (const route of routes) {
    m.connections.inc({ route }, 0)
    m.active.set({ route }, 0)
    for (const result of RESULTS) m.results.inc({ route, result }, 0)
    for (const direction of ['client_to_backend', 'backend_to_client']) m.bytes.inc({ route, direction }, 0)
  }
  return m
}

type CounterChild = ReturnType<Counter<'route'>['labels']>
type GaugeChild = ReturnType<Gauge<'route'>['labels']>

/** One route's series, bound once: no label hashing per connection. */
export interface RouteMetrics {
  connections: CounterChild
  active: GaugeChild
  results: Record<Result, CounterChild>
  up: CounterChild
  down: CounterChild
}

export function routeMetrics(m: GateMetrics, route: string): RouteMetrics {
  return {
    connections: m.connections.labels({ route }),
    active: m.active.labels({ route }),
    results: Object.fromEntries(RESULTS.map((result) => [result, m.results.labels({ route, result })])) as Record<
      Result,
      CounterChild
    >,
    up: m.bytes.labels({ route, direction: 'client_to_backend' }),
    down: m.bytes.labels({ route, direction: 'backend_to_client' }),
  }
}
