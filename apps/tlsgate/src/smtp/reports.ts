/**
 * SMTP correlation reports (spec edge-gate.md, "SMTP correlation report" and "SMTP report
 * generation"): per SMTP namespace and exact listener, one report per hour with its coverage
 * interval, generation time, aggregate counts (connections by result) and bounded evidence
 * (the refused and the most frequent TLS clients), identified by a replay id derived from the
 * content, so re-sending the same report is idempotent. Uploaded to POST /v1/smtp/reports;
 * a 409 (the control plane holds a newer or conflicting generation) drops the report.
 * Reports never approve or block anything.
 */
import { createHash } from 'node:crypto'
import type { ControlPlaneClient } from '@gatehouse/kit/control-plane-client.ts'
import { ControlPlaneError } from '@gatehouse/kit/control-plane-client.ts'
import type { SmtpReport } from '@gatehouse/kit/edge-wire.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import type { Route } from '../config.ts'
import type { ConnectionOutcome } from '../gate/connection.ts'

export type SmtpReportBody = Omit<SmtpReport, 'instance_id'>

/** Evidence items per report (the wire schema's maximum). */
export const MAX_EVIDENCE = 100
/** Distinct evidence keys tracked per window; beyond, new keys are only counted. */
const MAX_TRACKED = 10_000
/** Reports kept per listener while the control plane is unreachable (two days of hours). */
const MAX_QUEUED = 48

interface Evidence {
  kind: string
  ip?: string
  fingerprint?: string
  count: number
  last_seen: string
}

interface Window {
  listener: string
  from: number
  counts: Map<string, number>
  evidence: Map<string, Evidence>
}

export function hourStart(ms: number): number {
  return ms - (ms % 3_600_000)
}

/** The replay id: SHA-256 (base64url) of the report without its generation time. */
export function replayId(report: Omit<SmtpReportBody, 'replay_id' | 'generated_at'>): string {
  const canonical = JSON.stringify([
    report.namespace,
    report.listener,
    report.coverage.from,
    report.coverage.to,
    Object.entries(report.counts).sort(([a], [b]) => (a < b ? -1 : 1)),
    report.evidence.map((e) => [e.kind, e.ip ?? '', e.fingerprint ?? '', e.count, e.last_seen ?? '']),
  ])
  return createHash('sha256').update(canonical).digest('base64url')
}

export class SmtpReporter {
  readonly namespace: string
  readonly #windows = new Map<string, Window>()
  readonly #queue: SmtpReportBody[] = []
  readonly #now: () => number

  constructor(namespace: string, now: () => number = Date.now) {
    this.namespace = namespace
    this.#now = now
  }

  /** Count one connection of an SMTP route. */
  record(route: Route, o: ConnectionOutcome): void {
    const listener = route.name.replace(/^smtp:/, '')
    let w = this.#windows.get(listener)
    if (!w) {
      w = { listener, from: hourStart(this.#now()), counts: new Map(), evidence: new Map() }
      this.#windows.set(listener, w)
    }
    w.counts.set('connections', (w.counts.get('connections') ?? 0) + 1)
    w.counts.set(o.result, (w.counts.get(o.result) ?? 0) + 1)
    if (!o.fingerprint) return
    const refused = o.result.startsWith('refused_')
    // Refused clients are evidence per address; allowed ones only per fingerprint (no addresses kept).
    const kind = refused ? o.result : 'tls_client'
    const key = refused ? `${kind}|${o.ip}|${o.fingerprint}` : `${kind}|${o.fingerprint}`
    const at = new Date(this.#now()).toISOString()
    const e = w.evidence.get(key)
    if (e) {
      e.count++
      e.last_seen = at
    } else if (w.evidence.size < MAX_TRACKED) {
      w.evidence.set(key, {
        kind,
        ...(refused ? { ip: o.ip } : {}),
        fingerprint: o.fingerprint,
        count: 1,
        last_seen: at,
      })
    }
  }

  /**
   * Close every listener's window at `until` (an hour boundary in `serve`) and queue its
   * report; the next window starts there. Returns the new reports.
   */
  cut(until = hourStart(this.#now())): SmtpReportBody[] {
    const made: SmtpReportBody[] = []
    for (const w of this.#windows.values()) {
      if (w.from >= until) continue
      const evidence = [...w.evidence.values()]
        // Refusals first, then by count; ties in a stable order so the replay id is stable.
        .sort(
          (a, b) =>
            Number(b.kind !== 'tls_client') - Number(a.kind !== 'tls_client') ||
            b.count - a.count ||
            (a.fingerprint ?? '').localeCompare(b.fingerprint ?? '') ||
            (a.ip ?? '').localeCompare(b.ip ?? ''),
        )
        .slice(0, MAX_EVIDENCE)
      const body = {
        namespace: this.namespace,
        listener: w.listener,
        coverage: { from: new Date(w.from).toISOString(), to: new Date(until).toISOString() },
        counts: Object.fromEntries(w.counts),
        evidence,
      }
      const report: SmtpReportBody = {
        ...body,
        generated_at: new Date(this.#now()).toISOString(),
        replay_id: replayId(body),
      }
      made.push(report)
      this.#queue.push(report)
      w.from = until
      w.counts = new Map()
      w.evidence = new Map()
    }
    // Oldest dropped first when the control plane stays away for days.
    const perListener = new Map<string, number>()
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const n = (perListener.get(this.#queue[i]!.listener) ?? 0) + 1
      perListener.set(this.#queue[i]!.listener, n)
      if (n > MAX_QUEUED) this.#queue.splice(i, 1)
    }
    return made
  }

  /** Reports waiting for upload, oldest first. */
  get queued(): readonly SmtpReportBody[] {
    return this.#queue
  }

  /**
   * Upload the queue oldest first. Accepted, replayed and 409-refused reports leave the queue
   * (a 409 means the control plane holds a newer or conflicting generation: ours is stale);
   * a network or server failure stops here and the rest waits for the next call.
   */
  async upload(client: ControlPlaneClient, logger: Logger): Promise<{ sent: number; stale: number }> {
    let sent = 0
    let stale = 0
    while (this.#queue.length > 0) {
      const report = this.#queue[0]!
      try {
        await client.sendSmtpReport(report)
        sent++
      } catch (err) {
        // Only a refusal of this report drops it; credentials, throttling and outages wait.
        if (!(err instanceof ControlPlaneError) || ![400, 409, 413].includes(err.status ?? 0)) throw err
        stale++
        const level = err.status === 409 ? 'warn' : 'error'
        logger[level](
          { listener: report.listener, coverage: report.coverage, code: err.code, status: err.status },
          err.status === 409 ? 'control plane holds a newer SMTP report; dropped ours' : 'SMTP report refused; dropped',
        )
      }
      this.#queue.shift()
    }
    return { sent, stale }
  }
}
