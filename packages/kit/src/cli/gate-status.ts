/**
 * A gate's `status` (like `fail2ban-client status`), for both gates: the routes, whether the
 * running gate answers (its connection results since it started, read from its metrics
 * endpoint), the stored fingerprints by verdict (one past its expiry as pending), the gate's own counter, the last client seen
 * and the last control-plane sync. Read from the config and the store without touching the
 * running gate; a stopped gate is a state, not a failure. Loads no server or HTTP-client stack.
 */
import { type Kysely, sql } from 'kysely'
import type { ManagedRangesDB } from '../gate-bypass.ts'
import { type GateStoreDB, POLICY_CURSOR_KEY, UPLOAD_ACK_KEY } from '../gate-store.ts'
import { gateStatusOf } from '../gate-verdict.ts'
import { formatListenAddress } from '../net.ts'
import { escapeTerminal } from '../terminal.ts'
import { askLocal, metricSamples, metricValue } from './live-metrics.ts'
import { paint } from './output.ts'

export interface GateStatusInputs {
  /** The binary's name, also its metrics prefix (`<app>_connection_results_total`). */
  app: string
  dbPath: string
  routes: ReadonlyArray<{ listen: string; backend: string }>
  metricsListen?: { host: string; port: number } | undefined
  /** What the gate does with clients it does not know, as a phrase (`rejected`, `let through`). */
  unknownClients: string
  /**
   * The gate's own counter column of `fingerprints`, summed over entries, with its JSON key and
   * its label (sshproxy: `enrolled_count`, `enrolled_connections`, `enrolled connections`).
   */
  counter: { column: string; key: string; label: string }
  controlPlane?: { url: string; instanceId: string } | undefined
  /** `max_fingerprints` in effect (0 already read as 100000); -1: no cap. */
  maxFingerprints: number
}

type StatusDB = GateStoreDB & ManagedRangesDB

/** What `status --json` prints. */
export interface GateStatusReport {
  routes: Array<{ listen: string; backend: string }>
  /** `running` null: no metrics address to ask. */
  gate: { running: boolean | null; connections: Record<string, number> | null }
  /** From the running gate, with a control plane: its last successful sync and the failed cycles since it started. */
  sync: { last_success: string | null; failed_cycles: number } | null
  database: string
  unknown_clients: string
  fingerprints: { total: number; approved: number; blocked: number; pending: number; new: number }
  /** The stored-entry cap (undecided entries are pruned first), or null for none. */
  max_fingerprints: number | null
  last_client_seen: string | null
  control_plane: {
    url: string
    instance_id: string
    last_upload_acknowledged: string | null
    /** When the gate last stored a policy cursor (every pull, changed or not). */
    last_policy_pull: string | null
    policy_cursor: string | null
    trusted_ranges: number
  } | null
  /** And the gate's own counter, under `counter.key` (e.g. `enrolled_connections`). */
  [counter: string]: unknown
}

/**
 * `<app>_connection_results_total` summed over routes, and the sync metrics; undefined when the
 * gate does not answer.
 */
async function liveResults(app: string, address: { host: string; port: number }) {
  const res = await askLocal(address, '/metrics')
  if (res?.status !== 200) return undefined
  const lastSuccess = metricValue(res.text, `${app}_sync_last_success_timestamp_seconds`)
  const failed = metricSamples(res.text, `${app}_sync_cycles_total`, 'result').failed
  return {
    connections: metricSamples(res.text, `${app}_connection_results_total`, 'result'),
    sync:
      lastSuccess === undefined
        ? null
        : {
            last_success: lastSuccess > 0 ? new Date(lastSuccess * 1000).toISOString() : null,
            failed_cycles: failed ?? 0,
          },
  }
}

/** A sync is shown as failing when it has failed since start and not succeeded for this long. */
const SYNC_STALE_MS = 5 * 60_000

/** The status as data (`--json` prints it); `db` is the store, opened by the caller. */
export async function gateStatusReport(inputs: GateStatusInputs, db: Kysely<StatusDB>): Promise<GateStatusReport> {
  const live = inputs.metricsListen ? await liveResults(inputs.app, inputs.metricsListen) : undefined
  const rows = await db
    .selectFrom('fingerprints')
    .select((eb) => [
      'verdict',
      eb.fn.countAll<number>().as('n'),
      // The gate's own column, outside the shared table type.
      sql<number | null>`sum(${sql.ref(inputs.counter.column)})`.as('counted'),
      // A client seen: an entry made by a pulled decision (count 0) was never a connection.
      sql<string | null>`max(case when count > 0 then last_seen end)`.as('last_seen'),
      eb('decided_at', 'is', null).as('undecided'),
    ])
    .groupBy(['verdict', 'undecided'])
    .execute()
  const fingerprints = { total: 0, approved: 0, blocked: 0, pending: 0, new: 0 }
  let counter = 0
  let lastSeen: string | null = null
  for (const r of rows) {
    const n = Number(r.n)
    fingerprints.total += n
    if (Number(r.undecided) === 1) fingerprints.new += n
    else fingerprints[r.verdict] += n
    counter += Number(r.counted ?? 0)
    if (r.last_seen !== null && (lastSeen === null || Date.parse(r.last_seen) > Date.parse(lastSeen)))
      lastSeen = r.last_seen
  }
  // A decision past its expiry counts as pending, as the gate treats it (few entries expire).
  const expiring = await db
    .selectFrom('fingerprints')
    .select(['verdict', 'decided_at', 'expires_at'])
    .where('expires_at', 'is not', null)
    .execute()
  const now = Date.now()
  for (const e of expiring) {
    if (e.decided_at === null || e.verdict === 'pending' || gateStatusOf(e, now) !== 'pending') continue
    fingerprints[e.verdict]--
    fingerprints.pending++
  }
  const state = await db
    .selectFrom('sync_state')
    .select(['key', 'value', 'updated_at'])
    .where('key', 'in', [UPLOAD_ACK_KEY, POLICY_CURSOR_KEY])
    .execute()
  const at = (key: string) => state.find((s) => s.key === key)?.updated_at ?? null
  const ranges = await db
    .selectFrom('managed_ranges')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  const cp = inputs.controlPlane
  return {
    routes: inputs.routes.map((r) => ({ listen: r.listen, backend: r.backend })),
    gate: inputs.metricsListen
      ? live
        ? { running: true, connections: live.connections }
        : { running: false, connections: null }
      : { running: null, connections: null },
    sync: cp && live ? live.sync : null,
    database: inputs.dbPath,
    unknown_clients: inputs.unknownClients,
    fingerprints,
    max_fingerprints: inputs.maxFingerprints < 0 ? null : inputs.maxFingerprints,
    [inputs.counter.key]: counter,
    last_client_seen: lastSeen,
    control_plane: cp
      ? {
          url: cp.url,
          instance_id: cp.instanceId,
          last_upload_acknowledged: at(UPLOAD_ACK_KEY),
          last_policy_pull: at(POLICY_CURSOR_KEY),
          policy_cursor: state.find((s) => s.key === POLICY_CURSOR_KEY)?.value ?? null,
          trusted_ranges: Number(ranges.n),
        }
      : null,
  }
}

/** The status as text, one fact per line (colour only on a terminal, see `paint`). */
export function formatGateStatus(inputs: GateStatusInputs, report: GateStatusReport): string {
  const f = report.fingerprints
  const cp = report.control_plane
  const address = inputs.metricsListen
  const lines = [
    report.routes.length === 0
      ? `routes: not given here (serve's --route or $${inputs.app.toUpperCase()}_ROUTES; status works without)`
      : `routes: ${report.routes.length}`,
    ...report.routes.map((r) => `  ${r.listen} -> ${r.backend}`),
    `database: ${escapeTerminal(report.database)}`,
    report.gate.running === null
      ? 'gate: unknown (no --metrics-listen: status reads the running gate through its metrics endpoint)'
      : report.gate.running
        ? `gate: running; connections since it started: ${
            Object.entries(report.gate.connections!)
              .filter(([, n]) => n > 0)
              .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
              .map(([r, n]) => `${n} ${r}`)
              .join(', ') || 'none'
          }`
        : paint('red', `gate: not answering on ${formatListenAddress(address!)} (not running?)`),
    `unknown clients: ${report.unknown_clients}`,
    `fingerprints: ${f.total} stored ${report.max_fingerprints === null ? '(no cap)' : `of at most ${report.max_fingerprints}`}: ${paint('green', `${f.approved} approved`)}, ${paint('red', `${f.blocked} blocked`)}, ${f.pending} pending, ${f.new > 0 ? paint('yellow', `${f.new} new`) : '0 new'}`,
    `${inputs.counter.label}: ${report[inputs.counter.key]}`,
    `last client seen: ${report.last_client_seen ?? 'never'}`,
    cp
      ? `control plane: ${escapeTerminal(cp.url)} as ${escapeTerminal(cp.instance_id)}; last upload acknowledged ${cp.last_upload_acknowledged ?? 'never'}; last policy pull ${cp.last_policy_pull ?? 'never'}; ${cp.trusted_ranges} trusted ranges`
      : 'control plane: sync disabled (no control_plane.url)',
  ]
  const sync = report.sync
  if (sync) {
    const stale =
      sync.failed_cycles > 0 &&
      (sync.last_success === null || Date.now() - Date.parse(sync.last_success) > SYNC_STALE_MS)
    const text = `sync: last success ${sync.last_success ?? 'never since the gate started'}; ${sync.failed_cycles} failed cycles since it started`
    lines.push(stale ? paint('red', `${text} (failing: see the gate's log)`) : text)
  }
  return `${lines.join('\n')}\n`
}
