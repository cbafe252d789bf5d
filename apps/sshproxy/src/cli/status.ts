/**
 * `sshproxy status` (like `fail2ban-client status`): the routes, the stored fingerprints by
 * verdict, enrolments, and the last control-plane sync, read from the config and the store
 * without touching the running gate.
 */
import { existsSync } from 'node:fs'
import { paint } from '@gatehouse/kit/cli/output.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'
import { loadServeConfig } from '../config.ts'
import { getSyncState } from '../fingerprints/sync-store.ts'
import { formatAddress } from '../gate/backend.ts'
import { withStore } from './entries.ts'
import type { Io } from './io.ts'

// The sync loop's keys in sync_state (sync/gate-sync.ts; not imported: it loads the HTTP client).
const UPLOAD_ACK_KEY = 'upload_ack_seq'
const POLICY_CURSOR_KEY = 'policy_cursor'

/**
 * Connection results of the running gate since it started, from its metrics endpoint
 * (`sshproxy_connection_results_total`, summed over routes); undefined when it does not answer.
 */
async function liveResults(address: { host: string; port: number }): Promise<Record<string, number> | undefined> {
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '::' ? '::1' : address.host
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`
  let text: string
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000), redirect: 'manual' })
    if (!res.ok) return undefined
    text = await res.text()
  } catch {
    return undefined
  }
  const results: Record<string, number> = {}
  for (const m of text.matchAll(
    /^sshproxy_connection_results_total\{[^}]*result="([a-z_]+)"[^}]*\} (\d+(?:\.\d+)?(?:e\+\d+)?)$/gm,
  )) {
    results[m[1]!] = (results[m[1]!] ?? 0) + Number(m[2])
  }
  return results
}

export async function statusCommand(flags: Record<string, unknown>, json: boolean, io: Io): Promise<void> {
  const config = loadServeConfig({ flags, fileExists: existsSync })
  const live = config.metricsListen ? await liveResults(config.metricsListen) : undefined
  const report = await withStore(config.dbPath, async ({ db }) => {
    const rows = await db
      .selectFrom('fingerprints')
      .select((eb) => [
        'verdict',
        eb.fn.countAll<number>().as('n'),
        eb.fn.sum<number>('enrolled_count').as('enrolled'),
        eb.fn.max('last_seen').as('last_seen'),
        eb('decided_at', 'is', null).as('undecided'),
      ])
      .groupBy(['verdict', 'undecided'])
      .execute()
    const fingerprints = { total: 0, approved: 0, blocked: 0, pending: 0, new: 0 }
    let enrolled = 0
    let lastSeen: string | null = null
    for (const r of rows) {
      const n = Number(r.n)
      fingerprints.total += n
      if (Number(r.undecided) === 1) fingerprints.new += n
      else fingerprints[r.verdict] += n
      enrolled += Number(r.enrolled ?? 0)
      if (r.last_seen !== null && (lastSeen === null || Date.parse(r.last_seen) > Date.parse(lastSeen)))
        lastSeen = r.last_seen
    }
    const state = await db
      .selectFrom('sync_state')
      .select(['key', 'updated_at'])
      .where('key', 'in', [UPLOAD_ACK_KEY, POLICY_CURSOR_KEY])
      .execute()
    const at = (key: string) => state.find((s) => s.key === key)?.updated_at ?? null
    const ranges = await db
      .selectFrom('managed_ranges')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return {
      routes: config.routes.map((r) => ({ listen: r.name, backend: formatAddress(r.backend) })),
      gate: config.metricsListen
        ? live
          ? { running: true, connections: live }
          : { running: false, connections: null }
        : { running: null, connections: null },
      database: config.dbPath,
      unknown_clients: config.allowUnknown ? 'let through (enrollment)' : 'rejected',
      fingerprints,
      enrolled_connections: enrolled,
      last_client_seen: lastSeen,
      control_plane: config.controlPlane
        ? {
            url: config.controlPlane.url,
            instance_id: config.controlPlane.instanceId,
            last_upload_acknowledged: at(UPLOAD_ACK_KEY),
            last_policy_change: at(POLICY_CURSOR_KEY),
            policy_cursor: (await getSyncState(db, POLICY_CURSOR_KEY)) ?? null,
            trusted_ranges: Number(ranges.n),
          }
        : null,
    }
  })
  if (json) return io.out(`${JSON.stringify(report, null, 2)}\n`)
  const f = report.fingerprints
  const cp = report.control_plane
  const lines = [
    `routes: ${report.routes.length}`,
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
        : paint('red', `gate: not answering on ${formatAddress(config.metricsListen!)} (not running?)`),
    `unknown clients: ${report.unknown_clients}`,
    `fingerprints: ${f.total} stored: ${paint('green', `${f.approved} approved`)}, ${paint('red', `${f.blocked} blocked`)}, ${f.pending} pending, ${f.new > 0 ? paint('yellow', `${f.new} new`) : '0 new'}`,
    `enrolled connections: ${report.enrolled_connections}`,
    `last client seen: ${report.last_client_seen ?? 'never'}`,
    cp
      ? `control plane: ${escapeTerminal(cp.url)} as ${escapeTerminal(cp.instance_id)}; last upload acknowledged ${cp.last_upload_acknowledged ?? 'never'}; last policy change ${cp.last_policy_change ?? 'never'}; ${cp.trusted_ranges} trusted ranges`
      : 'control plane: sync disabled (no control_plane.url)',
  ]
  io.out(`${lines.join('\n')}\n`)
}
