/**
 * Timestamps from a node whose clock runs ahead of this server's. A sighting dated next year
 * would never age out of retention and would stay a fingerprint's latest forever; a signal
 * dated ahead would sit outside every window it belongs to. Such a time is recorded as the
 * time the batch arrived, which keeps the data and its order, and the node is named in a
 * warning: its clock misdates everything else it sends too. An SMTP report's generation time
 * orders it against the next one, so one dated ahead would make every later report stale. A clock behind cannot be told
 * from an old event, so only the future is checked. The nodes watch the other direction
 * themselves (the kit's `clockOffsetWarner`, from this server's `Date` header).
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'

/** Later than this past the arrival, a timestamp is from a clock that runs ahead (twice the nodes' own warning). */
export const FUTURE_TOLERANCE_MS = 60_000
const WARN_EVERY_MS = 10 * 60_000
const METRIC = { observations: 'observation', signals: 'signal', 'SMTP reports': 'smtp_report' } as const

/** One batch's check: `date` returns a parsed time, or the arrival time if it is too far ahead. */
export class ClockCheck {
  readonly nowMs: number
  readonly #limitMs: number
  clamped = 0
  maxAheadMs = 0

  constructor(nowMs: number) {
    this.nowMs = nowMs
    this.#limitMs = nowMs + FUTURE_TOLERANCE_MS
  }

  date(ms: number): number {
    if (ms <= this.#limitMs) return ms
    this.clamped++
    if (ms - this.nowMs > this.maxAheadMs) this.maxAheadMs = ms - this.nowMs
    return this.nowMs
  }
}

/** Counts and reports the clamped timestamps of each batch: a counter, and a warning per node at most every 10 minutes. */
export function clockAheadReporter(
  metrics: Pick<AppMetrics, 'counter'>,
  logger: Pick<Logger, 'warn'>,
  what: keyof typeof METRIC,
) {
  const counter = metrics.counter(
    `${METRIC[what]}_future_timestamps_total`,
    `Timestamps in ${what} from nodes more than 60 s ahead of this server, recorded as the time received`,
  )
  const warned = new Map<string, number>()
  return (instanceId: string, check: ClockCheck): void => {
    if (check.clamped === 0) return
    counter.inc(check.clamped)
    const last = warned.get(instanceId)
    if (last !== undefined && check.nowMs - last < WARN_EVERY_MS) return
    if (warned.size >= 10_000) warned.clear()
    warned.set(instanceId, check.nowMs)
    const ahead = Math.round(check.maxAheadMs / 1000)
    logger.warn(
      { instance_id: instanceId, timestamps: check.clamped, ahead_seconds: ahead },
      `node ${instanceId} sent ${what} dated up to ${ahead} s ahead of this server's clock; recorded as the time received. Synchronise its clock (NTP)`,
    )
  }
}
