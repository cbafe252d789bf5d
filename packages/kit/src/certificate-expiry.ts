/**
 * A certificate's expiry, watched: the HTTPS server's (edgegate) or a node's client certificate
 * for the control plane (the gates, websignal). An expired server certificate makes every node
 * and browser refuse the control plane; an expired client certificate makes the control plane
 * refuse the node, and every node issued on the same day stops syncing at the same minute.
 * Both happen without a word from the program that holds the certificate, and a renewal job
 * that failed quietly weeks earlier is the usual cause. So: a gauge for alerting rules, and
 * a warning in the log from 14 days before (an error once expired), at start, every 6 hours,
 * and after a SIGHUP reload.
 *
 * The CAs are watched the same way: edgegate's client CA (every node certificate it issued is
 * refused once it expires) and the CA a node verifies the control plane with (the node stops
 * trusting it). A bundle counts by its certificate that expires first: during a rotation that
 * is the old CA, and the certificates it issued do stop working on that day.
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

/** The certificate of a PEM bundle that expires first: when, and its subject. */
export function bundleExpiry(pem: string | Buffer): { at: number; subject: string } | undefined {
  let first: { at: number; subject: string } | undefined
  for (const block of String(pem).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []) {
    const c = new X509Certificate(block)
    const at = c.validToDate.getTime()
    if (first === undefined || at < first.at) first = { at, subject: c.subject.replaceAll('\n', ', ') }
  }
  return first
}

/**
 * For `doctor`: how long a certificate has left, e.g. `valid until 2027-01-31T00:00:00.000Z (61
 * days left)`, a warning within 14 days, and `expired` when it has.
 */
export function certificateValidity(cert: string | Buffer, now = Date.now()): { text: string; expired: boolean } {
  return expiryValidity(certificateExpiresAt(cert), now)
}

/**
 * `certificateValidity` for a CA bundle: the certificate that expires first, named by its
 * subject when the bundle holds several; undefined when it holds none.
 */
export function bundleValidity(pem: string | Buffer, now = Date.now()): { text: string; expired: boolean } | undefined {
  const first = bundleExpiry(pem)
  if (first === undefined) return undefined
  const several = (String(pem).match(/-----BEGIN CERTIFICATE-----/g) ?? []).length > 1
  const v = expiryValidity(first.at, now)
  return several ? { ...v, text: `${first.subject} ${v.text}` } : v
}

/**
 * For a node's `doctor`: a line for the control-plane client certificate and one for the CA
 * bundle, and a problem for each that has expired (the node cannot sync with it).
 */
export function controlPlaneCertificateReport(pem: { clientCert?: Buffer; ca?: Buffer }): {
  lines: string[]
  problems: string[]
} {
  const lines: string[] = []
  const problems: string[] = []
  if (pem.clientCert) {
    const v = certificateValidity(pem.clientCert)
    lines.push(`client certificate: ${v.text}`)
    if (v.expired)
      problems.push(`control_plane.client_cert: ${v.text}; the control plane refuses this node until it is renewed`)
  }
  const ca = pem.ca ? bundleValidity(pem.ca) : undefined
  if (ca) {
    lines.push(`control-plane CA: ${ca.text}`)
    if (ca.expired) problems.push(`control_plane.ca: ${ca.text}; this node cannot verify the control plane with it`)
  }
  return { lines, problems }
}

function expiryValidity(at: number, now: number): { text: string; expired: boolean } {
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
  /**
   * `server`: this program's HTTPS certificate; `client`: its certificate for the control plane;
   * `client_ca`: the CA bundle the server verifies client certificates with; `ca`: the CA
   * bundle a node verifies the control plane with.
   */
  use: 'server' | 'client' | 'client_ca' | 'ca'
  /** The certificate's file, named in the log lines. */
  file: string
  /** The expiry of the certificate in use now (ms since the epoch), read at each check and scrape. */
  expiresAt: () => number | undefined
  /** For a CA bundle: the subject of the certificate that expires first, named in the log. */
  subject?: () => string | undefined
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
  client_ca: 'every node certificate it issued is refused once it expires',
  ca: 'this node stops trusting a control plane whose certificate it issued once it expires',
} as const

const REMEDY = {
  server: 'renew it, then send SIGHUP to load it',
  client: 'renew it, then send SIGHUP to load it',
  client_ca: 'add a new CA to the bundle, issue the node certificates from it, then send SIGHUP to load the bundle',
  ca: 'add the new CA to the bundle, then send SIGHUP to load it',
} as const

const WHAT = {
  server: 'the TLS certificate',
  client: 'the control-plane client certificate',
  client_ca: 'the client CA',
  ca: 'the control-plane CA',
} as const

// One gauge per registry; each watch adds its certificate to it.
const sources = new WeakMap<object, Map<string, () => number | undefined>>()

/**
 * Export `<app>_tls_certificate_expiry_timestamp_seconds{use}` and warn as the day comes. One
 * watch per program (the gauge is registered once).
 *
 * @example
 * const watch = watchCertificateExpiry({ metrics, logger, use: 'server', file, expiresAt: () => expiry })
 */
export function watchCertificateExpiry(o: CertificateExpiryOptions): CertificateExpiryWatch {
  const now = o.now ?? Date.now
  let uses = sources.get(o.metrics)
  if (uses === undefined) {
    const registered = new Map<string, () => number | undefined>()
    sources.set(o.metrics, registered)
    uses = registered
    o.metrics.gauge(
      'tls_certificate_expiry_timestamp_seconds',
      'Unix time at which a certificate in use expires (server: this HTTPS server; client: for the control plane; client_ca, ca: the first to expire in that CA bundle)',
      ['use'],
      (g) => {
        for (const [use, expiresAt] of registered) {
          const at = expiresAt()
          if (at !== undefined) g.set({ use }, Math.floor(at / 1000))
        }
      },
    )
  }
  uses.set(o.use, o.expiresAt)
  const what = WHAT[o.use]
  const check = () => {
    const at = o.expiresAt()
    if (at === undefined) return
    const left = at - now()
    const subject = o.subject?.()
    const fields = { file: o.file, valid_to: new Date(at).toISOString(), ...(subject ? { subject } : {}) }
    const which = subject ? `${what} ${o.file} (${subject})` : `${what} ${o.file}`
    if (left <= 0) {
      const message = `${which} expired on ${fields.valid_to}: ${CONSEQUENCE[o.use]}; ${REMEDY[o.use]}`
      o.logger.error(fields, message)
      o.onNotice?.('error', message)
    } else if (left < EXPIRY_WARN_MS) {
      const days = Math.floor(left / 86_400_000)
      const when = days === 0 ? 'within a day' : `in ${days} day${days === 1 ? '' : 's'}`
      const message = `${which} expires ${when} (${fields.valid_to}): ${CONSEQUENCE[o.use]}; ${REMEDY[o.use]}`
      o.logger.warn({ ...fields, days_left: days }, message)
      o.onNotice?.('warn', message)
    }
  }
  check()
  const timer = setInterval(check, o.intervalMs ?? CHECK_EVERY_MS)
  timer.unref()
  return {
    check,
    stop: () => {
      clearInterval(timer)
      uses.delete(o.use)
    },
  }
}
