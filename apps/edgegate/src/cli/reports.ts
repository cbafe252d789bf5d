/**
 * Read-only reports: `status` (like `cscli lapi status`), `decision list`, `fingerprint list`
 * and `audit list`, as tables for people and `--json` for scripts.
 */

import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { paint, printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import { schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { parseDatabaseUrl } from '@gatehouse/kit/db/url.ts'
import { parseDuration } from '@gatehouse/kit/durations.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { listAdmins, listAudit } from '../admins/store.ts'
import { statusSchema } from '../config.ts'
import { toDecision } from '../decisions/service.ts'
import { listDecisions } from '../decisions/store.ts'
import { describeNode, STATE_STYLE } from '../nodes/registry.ts'
import { getNode, listNodes } from '../nodes/store.ts'
import { countWaiting, listFingerprintsByDecision } from '../observations/store.ts'
import { formatMillis, parseMillis } from '../timestamps.ts'
import { databaseUrl, readDatabase } from './database.ts'
import { noNodesYet } from './next-steps.ts'
import { probeServer } from './server-probe.ts'

type Opts = Record<string, unknown>
const STATUSES = ['approved', 'blocked', 'pending'] as const
type Status = (typeof STATUSES)[number]
const verdictStyle = (s: string | null) => (s === 'approved' ? 'green' : s === 'blocked' ? 'red' : 'yellow')
const out = (text: string) => void process.stdout.write(text)

/** The filters a list was asked with, spelled as flags (`--status blocked --instance edge-1`), for the words an empty list prints. */
function filtersGiven(o: Opts, flags: string[]): string {
  return flags
    .filter((f) => o[f] !== undefined)
    .map((f) => `--${f} ${String(o[f])}`)
    .join(' ')
}
/** The fortnight before a token's expiry that the health pass and `admin list` warn about (as for certificates). */
const TOKEN_WARN_MS = 14 * 86_400_000

function limitOf(o: Opts, max = 10_000): number {
  const n = Number(o.limit)
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`--limit must be an integer from 1 to ${max}`)
  return n
}

function statusOf(o: Opts, allowed: readonly string[]): string | undefined {
  if (o.status === undefined) return undefined
  if (!allowed.includes(o.status as string))
    throw new UsageError(`--status must be one of ${allowed.join(', ')}, got ${JSON.stringify(o.status)}`)
  return o.status as string
}

/** The database location without a password, for display. */
function shownLocation(url: string): string {
  const { kind, location } = parseDatabaseUrl(url)
  if (kind === 'sqlite') return location
  try {
    const u = new URL(location)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
  }
}

/** Where the listen address came from, in the words of `status`. */
function listenSource(source: string, file: string | undefined): string {
  if (source === 'flag') return '--listen'
  if (source === 'env') return '$EDGEGATE_LISTEN'
  if (source === 'file') return `the config file ${file ?? ''}`.trimEnd()
  return `the default, as no --listen, $EDGEGATE_LISTEN or "listen" in ${file ? `the config file ${file}` : 'a config file'} names one`
}

export async function status(o: Opts): Promise<void> {
  const url = databaseUrl(o)
  // The next steps it prints are spelled the way the user ran edgegate (`bin/edgegate` in a checkout).
  const edgegate = invokedAs('edgegate')
  const rotateHint = ` (${edgegate} admin rotate-token NAME)`
  // The address serve listens on, resolved as serve resolves it (flag, environment, the config
  // file, the default); where it came from is said with the answer, so a report about the wrong
  // server shows why.
  const loaded = loadAppConfig('edgegate', statusSchema, {
    flags: schemaFlags(o, statusSchema),
    config: o.config as string | undefined,
    partial: true,
  })
  const { listen, control_socket: controlSocket } = loaded.config
  const listenFrom = listenSource(loaded.sources.listen ?? 'default', loaded.file)
  // Asked while the database is read: neither waits on the other.
  const probe = probeServer(listen, controlSocket)
  const fromDatabase = await readDatabase(o, async (d) => {
    const nodes = (await listNodes(d.db)).map(describeNode)
    const counts = await d.db
      .selectFrom('decisions')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('scope_type', '=', 'instance')
      .where('deleted', '=', 0)
      .groupBy('status')
      .execute()
    const observed = await d.db
      .selectFrom('fingerprints')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const decisions: Record<Status, number> = { approved: 0, blocked: 0, pending: 0 }
    for (const c of counts) decisions[c.status] = Number(c.n)
    const admins = await listAdmins(d.db)
    const now = Date.now()
    // Tokens that stop working within the fortnight `admin list` paints yellow, or already have.
    const expiring = admins
      .filter((a) => a.expires_ms !== null && Number(a.expires_ms) < now + TOKEN_WARN_MS)
      .map((a) => ({
        name: a.name,
        expires_at: formatMillis(Number(a.expires_ms)),
        expired: Number(a.expires_ms) <= now,
      }))
      .sort((a, b) => a.expires_at.localeCompare(b.expires_at))
    return {
      database: { kind: d.kind, location: shownLocation(url), reachable: true, writable: d.readOnly !== true },
      nodes,
      decisions,
      fingerprints: { observed: Number(observed.n), waiting_for_decision: await countWaiting(d.db) },
      administrators: { count: admins.length, expiring_tokens: expiring },
    }
  })
  const server = await probe
  const report = { server: { listen, listen_from: listenFrom, ...server }, ...fromDatabase }
  if (o.json === true) return out(`${terminalJson(report, 2)}\n`)
  const dayAgo = Date.now() - 86_400_000
  const recent = report.nodes.filter((n) => n.last_seen_at !== null && Date.parse(n.last_seen_at) >= dayAgo).length
  const active = report.nodes.filter((n) => n.active).length
  const silent = report.nodes.filter((n) => n.state === 'silent').length
  out(
    [
      server.answering
        ? `server: ${paint('green', 'answering')} at ${escapeTerminal(server.url)} (/readyz ${server.status}${server.status === 200 || server.status === 204 ? ', ready' : ', not ready'}; listen address from ${escapeTerminal(listenFrom)}${server.control_socket ? `; asked on the control socket ${escapeTerminal(server.control_socket)}` : ''})`
        : `server: ${paint('red', 'not answering')} at ${escapeTerminal(server.url)} (${escapeTerminal(server.error ?? '')}; listen address from ${escapeTerminal(listenFrom)}): gates serve on the verdicts they last pulled and nothing reaches the database; is edgegate serve running, with this --listen (or "listen" in the config file)?`,
      `database: ${report.database.kind} ${escapeTerminal(report.database.location)} (${paint('green', 'reachable')}, migrations applied${
        report.database.writable
          ? ''
          : `, ${paint('red', 'on a read-only file system')}: nothing can be changed until it is writable again`
      })`,
      `nodes: ${report.nodes.length} registered, ${active} active, ${recent} seen in the last 24 hours${
        silent > 0
          ? `, ${paint('yellow', `${silent} silent`)} (not heard from for 10 minutes${server.answering ? '' : ': the server not answering may be why'})`
          : ''
      }`,
      `decisions: ${report.decisions.approved} approved, ${report.decisions.blocked} blocked, ${report.decisions.pending} pending`,
      `fingerprints: ${report.fingerprints.observed} observed, ${
        report.fingerprints.waiting_for_decision > 0
          ? paint('yellow', `${report.fingerprints.waiting_for_decision} waiting for a decision`)
          : '0 waiting for a decision'
      }`,
      `administrators: ${report.administrators.count}${report.administrators.expiring_tokens
        .map((t) =>
          t.expired
            ? `, ${paint('red', `${escapeTerminal(t.name)}'s token expired ${t.expires_at}`)}`
            : `, ${paint('yellow', `${escapeTerminal(t.name)}'s token expires ${t.expires_at}`)}`,
        )
        .join('')}${report.administrators.expiring_tokens.length > 0 ? rotateHint : ''}`,
      '',
    ].join('\n'),
  )
  if (report.nodes.length === 0) return out(`${noNodesYet()}\n`)
  printList(report.nodes, [
    { header: 'INSTANCE', value: (n) => n.instance_id },
    { header: 'KIND', value: (n) => n.kind },
    { header: 'STATE', value: (n) => n.state, style: (n) => STATE_STYLE[n.state] },
    { header: 'LAST SEEN', value: (n) => n.last_seen_at ?? 'never' },
  ])
}

export async function decisionList(o: Opts): Promise<void> {
  // Up to what `decision import` takes: the list is also the export.
  const limit = limitOf(o, 100_000)
  const st = statusOf(o, STATUSES)
  const rows = await readDatabase(o, async (d) => {
    // An instance that is not there is a mistake to name, not an empty list.
    if (o.instance !== undefined && !(await getNode(d.db, o.instance as string)))
      throw new CliError(`no node with instance_id ${o.instance as string} (edgegate node list shows them)`)
    return listDecisions(d.db, {
      ...(o.instance !== undefined ? { scopeId: o.instance as string } : {}),
      ...(st !== undefined ? { status: st } : {}),
      ...(o.source !== undefined ? { source: o.source as string } : {}),
      limit,
      offset: 0,
    })
  })
  const decisions = rows.map((r) => ({ ...toDecision(r), source: r.source }))
  const filters = filtersGiven(o, ['instance', 'status', 'source'])
  printList(
    decisions,
    [
      { header: 'INSTANCE', value: (d) => d.scope_id },
      { header: 'FINGERPRINT', value: (d) => d.fingerprint },
      { header: 'STATUS', value: (d) => d.status, style: (d) => verdictStyle(d.status) },
      { header: 'SOURCE', value: (d) => d.source },
      { header: 'ACTOR', value: (d) => d.actor },
      // The JSON keeps the decision clock's microseconds; the table shows the millisecond, as EXPIRES does.
      { header: 'UPDATED', value: (d) => formatMillis(parseMillis(d.updated_at)!) },
      { header: 'EXPIRES', value: (d) => d.expires_at ?? '-' },
      { header: 'LABEL', value: (d) => d.label },
    ],
    {
      json: o.json === true,
      empty:
        filters !== ''
          ? `no decisions match ${filters}`
          : `no decisions yet: ${invokedAs('edgegate')} decision block --instance INSTANCE_ID FINGERPRINT makes one; gates report what they see (fingerprint list)`,
    },
  )
}

export async function fingerprintList(o: Opts): Promise<void> {
  const limit = limitOf(o)
  const st = statusOf(o, [...STATUSES, 'none']) as Status | 'none' | undefined
  const rows = await readDatabase(o, (d) =>
    listFingerprintsByDecision(d.db, {
      ...(o.instance !== undefined ? { instanceId: o.instance as string } : {}),
      ...(st !== undefined ? { status: st } : {}),
      limit,
      offset: 0,
    }),
  )
  const fingerprints = rows.map((r) => ({
    instance_id: r.instance_id,
    fingerprint: r.fingerprint,
    decision: r.decision_status,
    label: r.decision_label ?? '',
    reported_status: r.reported_status,
    count: Number(r.count),
    ips: JSON.parse(r.ips) as string[],
    first_seen: formatMillis(Number(r.first_seen_ms)),
    last_seen: formatMillis(Number(r.last_seen_ms)),
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
  }))
  const filters = filtersGiven(o, ['instance', 'status'])
  printList(
    fingerprints,
    [
      { header: 'INSTANCE', value: (f) => f.instance_id },
      { header: 'FINGERPRINT', value: (f) => f.fingerprint },
      { header: 'DECISION', value: (f) => f.decision ?? 'none', style: (f) => verdictStyle(f.decision) },
      { header: 'COUNT', value: (f) => f.count },
      {
        header: 'IPS',
        value: (f) => (f.ips.length > 3 ? `${f.ips.slice(0, 3).join(',')},+${f.ips.length - 3}` : f.ips.join(',')),
      },
      { header: 'LAST SEEN', value: (f) => f.last_seen },
      { header: 'LABEL', value: (f) => f.label },
    ],
    {
      json: o.json === true,
      empty:
        filters !== ''
          ? `no fingerprints match ${filters}`
          : `no fingerprints yet: the gates report the clients they see (${invokedAs('edgegate')} status shows when each gate was last seen)`,
    },
  )
}

/** `--since`: an RFC 3339 time, or a duration back from now (`24h`, `90m`). */
export function sinceOf(text: string, now = Date.now()): number {
  const at = parseMillis(text)
  if (at !== undefined) return at
  try {
    return now - parseDuration(text)
  } catch {
    throw new UsageError(`--since must be an RFC 3339 time or a duration such as 24h, got ${JSON.stringify(text)}`)
  }
}

export async function auditList(o: Opts): Promise<void> {
  const limit = limitOf(o)
  const rows = await readDatabase(o, (d) =>
    listAudit(d.db, {
      ...(o.since !== undefined ? { sinceMs: sinceOf(o.since as string) } : {}),
      ...(o.actor !== undefined ? { actor: o.actor as string } : {}),
      ...(o.action !== undefined ? { action: o.action as string } : {}),
      ...(o.target !== undefined ? { target: o.target as string } : {}),
      limit,
    }),
  )
  const filters = filtersGiven(o, ['since', 'actor', 'action', 'target'])
  printList(
    rows.map((r) => ({ at: formatMillis(Number(r.at_ms)), actor: r.actor, action: r.action, target: r.target })),
    [
      { header: 'AT', value: (r) => r.at },
      { header: 'ACTOR', value: (r) => r.actor },
      { header: 'ACTION', value: (r) => r.action },
      { header: 'TARGET', value: (r) => r.target },
    ],
    {
      json: o.json === true,
      empty:
        filters !== ''
          ? `no audit entries match ${filters}`
          : 'the audit log is empty: every change made through the CLI, the API or the dashboard is entered here',
    },
  )
}
