/**
 * websignal's metrics (spec: web signal agent endpoints). No IP, path, host or user agent
 * is ever a label; labels are small fixed sets (reason, mode).
 */
import { type AppMetrics, createMetrics } from '@gatehouse/kit'
import { VERSION } from './version.ts'

export function agentMetrics(m: AppMetrics = createMetrics('websignal', VERSION)) {
  return {
    registry: m,
    ready: m.gauge('ready', '1 when the store is connected and every input has started'),
    lastObservation: m.gauge('last_observation_timestamp_seconds', 'Time of the newest parsed log line (Unix seconds)'),
    publisherOwner: m.gauge('publisher_owner', '1 on the instance holding the publisher lease'),
    clockOffset: m.gauge(
      'control_plane_clock_offset_seconds',
      "The control plane's clock minus this host's, from its last quick answer to a signal batch (about ±1 s); past ±30 s a warning is logged",
    ),
    parsed: m.counter('lines_parsed_total', 'Access-log lines parsed'),
    unmatched: m.counter('lines_unmatched_total', 'Lines that did not parse (never fatal)', ['reason']),
    tailRestarts: m.counter('input_tail_restarts_total', 'Inputs that switched files', ['reason']),
    storeFailures: m.counter('store_failures_total', 'Failed store calls (aggregation, outbox)'),
    leaseFailures: m.counter('publisher_lease_failures_total', 'Failed publisher-lease calls'),
    signalPublishFailures: m.counter('signal_publish_failures_total', 'Signal batches the control plane did not take'),
    analyticsPublishFailures: m.counter(
      'analytics_publish_failures_total',
      'Analytics batches the output did not take',
    ),
    signalOutbox: m.gauge('signal_outbox_depth', 'Signals waiting in the store-backed outbox'),
    analyticsOutbox: m.gauge('analytics_outbox_depth', 'Analytics records waiting in their outbox'),
    detected: m.counter('signals_detected_total', 'Scanner detections (once per host, site, IP and window)', ['mode']),
    published: m.counter('signals_published_total', 'Signals acknowledged by the control plane'),
    dropped: m.counter('signals_dropped_total', 'Oldest signals dropped because the outbox was full'),
  }
}

export type Metrics = ReturnType<typeof agentMetrics>
