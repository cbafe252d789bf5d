/**
 * A certificate's expiry, watched: the HTTPS server's (edgegate) or a node's client certificate
 * for the control plane (the gates, websignal). An expired server certificate makes every node
 * and browser refuse the control plane; an expired client certificate makes the control plane
 * refuse the node, and every node issued on the same day stops syncing at the same minute.
 * Both happen without a word from the program that holds the certificate, and a renewal job
 * that failed quietly weeks earlier is the usual cause. So: a gauge for alerting rules, and
 * a warning in the log from 14 days before (an error once expired), at start, every 6 hours,
 * and after a SIGHUP reload.
 */
import { X509Certificate } from 'node:crypto'
import type { Logger } from './logger.ts'
import type { AppMetrics } from './metrics.ts'

/** Warn from this long before expiry (certbot renews 30 days ahead, so 14 days means it failed twice). */
export const EXPIRY_WARN_MS = 14 * 86_400_000
const CHECK_EVERY_MS = 6 * 3_600_000

/** When a PEM or DER certificate stops being valid, in ms since the epoch (its first certificate, for a chain). */
export function certificateExpiresAt(cert: string | Buffer): number {
  return new X509Certificate(cert).validToDate.getTime()
}

/**
 * For `doctor`: how long a certificate has left, e.g. `valid until 2027-01-31T00:00:00.000Z (61
 * days left)`, a warning within 14 days, and `expired` when it has.
 */
export function certificateValidity(cert: string | Buffer, now = Date.now()): { text: string; expired: boolean } {
  const at = certificateExpiresAt(cert)
  const until = new Date(at).toISOString()
  if (at <= now) return { text: `EXPIRED on ${until}`, expired: true }
  const days = Math.floor((at - now) / 86_400_000)
  const left = `${days} day${days === 1 ? '' : 's'} left`
  return {
    text: `valid until ${until} (${at - now < EXPIRY_WARN_MS ? `only ${left}: renew it` : left})`,
    expired: false,
  }
}

export interface CertificateExpiryOptions {
  metrics: Pick<AppMetrics, 'gauge'>
  logger: Pick<Logger, 'warn' | 'error'>
  /** `server`: this program's HTTPS certificate; `client`: its certificate for the control plane. */
  use: 'server' | 'client'
  /** The certificate's file, named in the log lines. */
  file: string
  /** The expiry of the certificate in use now (ms since the epoch), read at each check and scrape. */
  expiresAt: () => number | undefined
  now?: () => number
  intervalMs?: number
  /** Called with each warning or error it logs (an alert channel; throttle there). */
  onNotice?: (level: 'warn' | 'error', message: string) => void
}

export interface CertificateExpiryWatch {
  /** Check now (after a reload) and log if it expires within 14 days. */
  check(): void
  stop(): void
}

const CONSEQUENCE = {
  server: 'nodes and browsers refuse this server once it expires',
  client: 'the control plane refuses this node once it expires',
} as const

/**
 * Export `<app>_tls_certificate_expiry_timestamp_seconds{use}` and warn as the day comes. One
 * watch per program (the gauge is registered once).
 *
 * @example
 * const watch = watchCertificateExpiry({ metrics, logger, use: 'server', file, expiresAt: () => expiry })
 */
export function watchCertificateExpiry(o: CertificateExpiryOptions): CertificateExpiryWatch {
  const now = o.now ?? Date.now
  o.metrics.gauge(
    'tls_certificate_expiry_timestamp_seconds',
    'Unix time at which the TLS certificate in use expires (server: this HTTPS server; client: for the control plane)',
    ['use'],
    (g) => {
      const at = o.expiresAt()
      if (at !== undefined) g.set({ use: o.use }, Math.floor(at / 1000))
    },
  )
  const what = o.use === 'server' ? 'the TLS certificate' : 'the control-plane client certificate'
  const check = () => {
    const at = o.expiresAt()
    if (at === undefined) return
    const left = at - now()
    const fields = { file: o.file, valid_to: new Date(at).toISOString() }
    if (left <= 0) {
      const message = `${what} ${o.file} expired on ${fields.valid_to}: ${CONSEQUENCE[o.use]}; renew it, then send SIGHUP to load it`
      o.logger.error(fields, message)
      o.onNotice?.('error', message)
    } else if (left < EXPIRY_WARN_MS) {
      const days = Math.floor(left / 86_400_000)
      const when = days === 0 ? 'within a day' : `in ${days} day${days === 1 ? '' : 's'}`
      const message = `${what} ${o.file} expires ${when} (${fields.valid_to}): ${CONSEQUENCE[o.use]}; renew it, then send SIGHUP to load it`
      o.logger.warn({ ...fields, days_left: days }, message)
      o.onNotice?.('warn', message)
    }
  }
  check()
  const timer = setInterval(check, o.intervalMs ?? CHECK_EVERY_MS)
  timer.unref()
  return { check, stop: () => clearInterval(timer) }
}
