/**
 * Which nodes have gone quiet. A gate pulls the policy every 30 s (backing off to 5 minutes
 * while the control plane fails) and websignal sends at least every 2 minutes (an empty batch
 * when it has no signal), so an active node of those kinds not heard from for 10 minutes is
 * down, cut off, or refused (an expired certificate, a rotated token): a gate enforces stale
 * decisions and its observations wait; a websignal's web evidence stops. Nothing else would
 * say so: the node logs its own failures where nobody looks, or cannot log at all. A legacy
 * log watcher sends only when it has signals, so silence from it means nothing.
 *
 * Every minute the registry is read (one small table): `edgegate_nodes{kind,state}` counts
 * nodes by state, with no instance label (bounded), for an alert on
 * `edgegate_nodes{state="silent"} > 0`; the log and `--alert-url` name each node as it goes
 * silent and as it comes back, claimed in `node_alerts` so that several processes on one
 * database (and a process after its restart) say it once; `edgegate node list` and the
 * dashboard show the state. A scrape never waits for the database.
 *
 * The same pass looks at the client certificate each node last presented: one that expires
 * within 14 days (or has) is counted (`edgegate_node_certificates_expiring`) and named once a
 * day, so a fleet's certificates are watched in one place, not only on each node. Administrator
 * tokens given an expiry (`edgegate admin add --expires-in`) are watched the same way
 * (`edgegate_admin_tokens_expiring`): named once a day within the 14 days, and once when expired,
 * so a script's token is renewed before the script starts failing.
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'
import { EXPIRY_WARN_MS } from '@gatehouse/kit/certificate-expiry.ts'
import { periodic } from '@gatehouse/kit/periodic.ts'
import type { Kysely } from 'kysely'
import { adminAlertKey, listAdmins } from '../admins/store.ts'
import type { AlertSink } from '../alerts.ts'
import type { DB, NodeKind, NodeRow } from '../db/schema.ts'
import { formatMillis } from '../timestamps.ts'
import { NODE_STATES, nodeState } from './registry.ts'
import { claimedSilent, claimNodeAlert, listNodes, releaseNodeAlert } from './store.ts'

const KINDS: readonly NodeKind[] = ['sshgate', 'tlsgate', 'websignal', 'log_watcher']

export function startNodeHealth(o: {
  db: Kysely<DB>
  metrics: Pick<AppMetrics, 'gauge' | 'counter'>
  logger: Pick<Logger, 'warn' | 'info'>
  /** Each transition also goes here (`--alert-url`). */
  alert?: AlertSink
  intervalMs?: number
  now?: () => number
}): { check(): Promise<void>; stop(): Promise<void> } {
  const clock = o.now ?? Date.now
  const gauge = o.metrics.gauge(
    'nodes',
    'Registered nodes by kind and state (silent: an active gate or websignal node not heard from for 10 minutes)',
    ['kind', 'state'],
  )
  const expiring = o.metrics.gauge(
    'node_certificates_expiring',
    'Active nodes whose client certificate expires within 14 days or has expired (as last presented)',
  )
  const tokensExpiring = o.metrics.gauge(
    'admin_tokens_expiring',
    'Administrator tokens that expire within 14 days or have expired',
  )
  const started = clock()
  const pass = async () => {
    const now = clock()
    const rows = await listNodes(o.db)
    const counts = new Map<string, number>()
    for (const kind of KINDS) for (const state of NODE_STATES) counts.set(`${kind}|${state}`, 0)
    const nowSilent = new Map<string, { last: number; kind: NodeKind }>()
    for (const n of rows) {
      const state = nodeState(n, now, started)
      counts.set(`${n.kind}|${state}`, (counts.get(`${n.kind}|${state}`) ?? 0) + 1)
      if (state === 'silent') nowSilent.set(n.instance_id, { last: Number(n.last_seen_ms), kind: n.kind })
    }
    for (const [key, value] of counts) {
      const [kind, state] = key.split('|') as [string, string]
      gauge.set({ kind, state }, value)
    }
    // Each transition is claimed in the database: one process of a fleet (and no process again
    // after a restart) logs and alerts it.
    const announced = new Set(await claimedSilent(o.db))
    for (const [id, { last, kind }] of nowSilent) {
      if (announced.has(id) || !(await claimNodeAlert(o.db, id, 'silent', now))) continue
      const meanwhile =
        kind === 'websignal' ? 'no web signals arrive from it' : 'it enforces the decisions it last pulled'
      const message = `node ${id} has not been heard from since ${formatMillis(last)}: it may be down, cut off or refused (an expired certificate, a rotated token), and ${meanwhile}`
      o.logger.warn({ instance_id: id, kind, last_seen_at: formatMillis(last) }, message)
      o.alert?.({
        title: `node ${id} is silent`,
        message,
        priority: 'high',
        tags: ['node-silent', kind],
        group: { key: 'node-silent', subject: id, plural: 'nodes are silent' },
      })
    }
    const byId = new Map(rows.map((n) => [n.instance_id, n]))
    for (const id of announced) {
      const n = byId.get(id)
      // Heard from again, disabled or removed; not merely inside this process's grace after start.
      if (n !== undefined && nodeState(n, now) === 'silent') continue
      if (!(await releaseNodeAlert(o.db, id, 'silent'))) continue
      const message = `node ${id} is heard from again (or was disabled or removed)`
      o.logger.info({ instance_id: id }, message)
      o.alert?.({
        title: `node ${id} is heard from again`,
        message,
        priority: 'default',
        tags: ['node-back'],
        group: { key: 'node-back', subject: id, plural: 'nodes are heard from again' },
      })
    }
    await checkCertificates(rows, now)
    await checkAdminTokens(now)
  }
  const checkCertificates = async (rows: NodeRow[], now: number) => {
    let count = 0
    for (const n of rows) {
      if (n.active !== 1 || n.cert_expires_ms === null) continue
      const at = Number(n.cert_expires_ms)
      const left = at - now
      if (left >= EXPIRY_WARN_MS) continue
      count++
      // Once a day for the whole fleet of processes, like the nodes' own warning.
      if (!(await claimNodeAlert(o.db, n.instance_id, 'certificate', now, 86_400_000))) continue
      const days = Math.floor(left / 86_400_000)
      const when =
        left <= 0
          ? `expired on ${formatMillis(at)}`
          : `expires in ${days} day${days === 1 ? '' : 's'} (${formatMillis(at)})`
      const message = `node ${n.instance_id}'s client certificate ${when}: this server refuses the node once it has; renew it on the node and send the node SIGHUP`
      o.logger.warn({ instance_id: n.instance_id, certificate_expires_at: formatMillis(at) }, message)
      o.alert?.({
        title: `node ${n.instance_id}'s client certificate ${left <= 0 ? 'has expired' : 'expires soon'}`,
        message,
        priority: left <= 0 ? 'urgent' : 'high',
        tags: ['certificate', n.kind],
        group: {
          key: 'node-certificate',
          subject: n.instance_id,
          plural: 'node client certificates expire soon or have expired',
        },
      })
    }
    expiring.set(count)
  }
  const checkAdminTokens = async (now: number) => {
    let count = 0
    for (const a of await listAdmins(o.db)) {
      if (a.expires_ms === null) continue
      const at = Number(a.expires_ms)
      const left = at - now
      if (left >= EXPIRY_WARN_MS) continue
      count++
      // Expiring: once a day, like certificates. Expired: once (it may be left to lapse on purpose).
      const expired = left <= 0
      const claimed = expired
        ? await claimNodeAlert(o.db, adminAlertKey(a.name), 'admin-token-expired', now)
        : await claimNodeAlert(o.db, adminAlertKey(a.name), 'admin-token', now, 86_400_000)
      if (!claimed) continue
      const days = Math.floor(left / 86_400_000)
      const message = expired
        ? `administrator ${a.name}'s token expired on ${formatMillis(at)}: it is refused; issue a new one with edgegate admin rotate-token ${a.name}, or remove it with edgegate admin remove ${a.name}`
        : `administrator ${a.name}'s token expires in ${days} day${days === 1 ? '' : 's'} (${formatMillis(at)}): whatever uses it is refused then; issue a new one with edgegate admin rotate-token ${a.name}`
      o.logger.warn({ admin: a.name, expires_at: formatMillis(at) }, message)
      o.alert?.({
        title: `administrator ${a.name}'s token ${expired ? 'has expired' : 'expires soon'}`,
        message,
        priority: 'high',
        tags: ['admin-token'],
        group: { key: 'admin-token', subject: a.name, plural: 'administrator tokens expire soon or have expired' },
      })
    }
    tokensExpiring.set(count)
  }
  const job = periodic(pass, {
    intervalMs: o.intervalMs ?? 60_000,
    firstRunMs: 0,
    metrics: { app: o.metrics, job: 'node_health' },
    // A pass that fails (the database is down) keeps the last counts: the outage is reported elsewhere.
    onError: () => {},
  })
  return { check: job.run, stop: job.stop }
}
