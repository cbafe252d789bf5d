/**
 * The administration commands: `edgegate node|admin|decision ...` and `migrate`, working on the
 * database directly (the same one `serve` uses). The registry rules and the decision service are
 * imported by the commands that change something: a list loads neither (nor node:crypto, which
 * the token code needs).
 */
import { userInfo } from 'node:os'
import { printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import type { Verdict } from '@gatehouse/kit/edge-wire.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { audit, insertAdmin, listAdmins, removeAdmin, replaceAdminToken } from '../admins/store.ts'
import { type Credential, describeNode, STATE_STYLE } from '../nodes/registry.ts'
import { getNode, listNodes } from '../nodes/store.ts'
import { formatMillis, parseMillis } from '../timestamps.ts'
import { readDatabase, withDatabase } from './database.ts'
import { noNodesYet } from './next-steps.ts'

type Opts = Record<string, unknown>

const actor = () => `cli:${userInfo().username}`
const out = (line: string) => void process.stdout.write(`${line}\n`)
const esc = (s: string) => escapeTerminal(s)
const nodeService = () => import('../nodes/service.ts')
const decisionService = () => import('../decisions/service.ts')

export async function migrate(o: Opts): Promise<void> {
  const kind = await withDatabase(o, async (d) => d.kind, 'create')
  out(`database (${kind}) is up to date`)
}

export async function backup(o: Opts, file: string): Promise<void> {
  const { backupDatabase } = await import('@gatehouse/kit/cli/backup.ts')
  out(await readDatabase(o, async (d) => backupDatabase(d, file)))
}

export async function nodeAdd(o: Opts, id: string): Promise<void> {
  if (o.certName !== undefined && o.certFingerprint !== undefined) {
    throw new UsageError('give --cert-name or --cert-fingerprint, not both (a node has exactly one credential)')
  }
  const credential: Credential =
    o.certName !== undefined
      ? { type: 'cert_name', name: o.certName as string }
      : o.certFingerprint !== undefined
        ? { type: 'cert_fingerprint', sha256: (o.certFingerprint as string).replaceAll(':', '').toLowerCase() }
        : { type: 'token' }
  const { addNode } = await nodeService()
  const token = await withDatabase(o, (d) => addNode(d.db, id, o.kind as string, credential, actor()))
  out(`node ${esc(id)} added (${esc(o.kind as string)})`)
  if (token) {
    out(`token: ${token}`)
    out('Store it now: it is shown only once.')
  }
}

export async function nodeList(o: Opts): Promise<void> {
  const nodes = (await readDatabase(o, (d) => listNodes(d.db))).map(describeNode)
  printList(
    nodes,
    [
      { header: 'INSTANCE', value: (n) => n.instance_id },
      { header: 'KIND', value: (n) => n.kind },
      { header: 'STATE', value: (n) => n.state, style: (n) => STATE_STYLE[n.state] },
      { header: 'AUTH', value: (n) => n.auth },
      { header: 'LAST SEEN', value: (n) => n.last_seen_at ?? 'never' },
      {
        header: 'CERT EXPIRES',
        value: (n) => n.certificate_expires_at?.slice(0, 10) ?? '-',
        style: (n) => expiryStyle(n.certificate_expires_at),
      },
    ],
    { json: o.json === true, empty: noNodesYet() },
  )
}

/**
 * Red once expired, yellow within the 14 days the health pass warns about a certificate (kit
 * EXPIRY_WARN_MS: not imported, it loads node:crypto); administrator tokens get the same.
 */
function expiryStyle(at: string | null) {
  if (at === null) return undefined
  const left = Date.parse(at) - Date.now()
  return left <= 0 ? 'red' : left < 14 * 86_400_000 ? 'yellow' : undefined
}

export async function nodeActive(o: Opts, id: string, active: boolean): Promise<void> {
  const { setNodeActive } = await nodeService()
  await withDatabase(o, (d) => setNodeActive(d.db, id, active, actor()))
  out(`node ${esc(id)} ${active ? 'enabled' : 'disabled'}`)
}

export async function nodeRemove(o: Opts, id: string): Promise<void> {
  const { removeNode, describeNodeData } = await nodeService()
  const { kind, removed } = await withDatabase(o, (d) => removeNode(d.db, d.kind, id, actor(), o.purge === true))
  const purged = describeNodeData(removed)
  out(`node ${esc(id)} (${kind}) removed${purged === '' ? '' : ` with ${purged}`}`)
  if (removed.decisions > 0)
    out('Its decisions stay as deletions until retention removes them: a gate that returns under this id drops them.')
}

/** One node, every field `node list` has (and when it was registered): what to check first when a gate gets 403. */
export async function nodeShow(o: Opts, id: string): Promise<void> {
  const row = await readDatabase(o, (d) => getNode(d.db, id))
  if (!row) throw new CliError(`no node ${esc(id)} (edgegate node list shows them all)`)
  const n = describeNode(row)
  if (o.json === true) return out(terminalJson(n, 2))
  const rows: [string, string][] = [
    ['instance', n.instance_id],
    ['kind', n.kind],
    ['state', n.state],
    ['auth', n.auth],
    ['registered', n.created_at],
    ['last seen', n.last_seen_at ?? 'never'],
    ['cert expires', n.certificate_expires_at ?? '-'],
  ]
  for (const [k, v] of rows) out(`${`${k}:`.padEnd(14)}${esc(v)}`)
}

export async function nodeRotate(o: Opts, id: string): Promise<void> {
  const { rotateNodeToken } = await nodeService()
  const { token, kind } = await withDatabase(o, (d) => rotateNodeToken(d.db, id, actor(), o.kind as string | undefined))
  out(`node ${esc(id)} (${kind}): new token`)
  out(`token: ${token}`)
  out('The previous token no longer works. Store this one now: it is shown only once.')
}

/** `--expires-in` / `--expires-at` as epoch ms, null when neither is given; a usage error before anything is written. */
async function tokenExpiry(o: Opts): Promise<number | null> {
  const { expiryOf } = await import('@gatehouse/kit/cli/expiry.ts')
  const at = expiryOf(o as { expiresIn?: string; expiresAt?: string })
  return at === undefined ? null : Date.parse(at)
}

const worksUntil = (expiresMs: number | null) =>
  expiresMs === null ? '' : ` (it works until ${formatMillis(expiresMs)})`

export async function adminAdd(o: Opts, name: string): Promise<void> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(name))
    throw new CliError('an administrator name is letters, digits, ".", "_", "@" or "-"')
  const expiresMs = await tokenExpiry(o)
  const { newToken } = await import('../auth/tokens.ts')
  const token = newToken('admin')
  await withDatabase(o, async (d) => {
    if ((await listAdmins(d.db)).some((a) => a.name === name))
      throw new CliError(`administrator ${name} already exists`)
    await insertAdmin(d.db, name, token.hash, Date.now(), expiresMs)
    await audit(d.db, actor(), 'admin.add', name)
  })
  out(`administrator ${name} added`)
  out(`token: ${token.token}`)
  out(`Store it now: it is shown only once${worksUntil(expiresMs)}.`)
}

export async function adminList(o: Opts): Promise<void> {
  const admins = await readDatabase(o, (d) => listAdmins(d.db))
  const now = Date.now()
  printList(
    admins.map((a) => ({
      name: a.name,
      created_at: formatMillis(Number(a.created_ms)),
      last_used_at: a.last_used_ms === null ? null : formatMillis(Number(a.last_used_ms)),
      expires_at: a.expires_ms === null ? null : formatMillis(Number(a.expires_ms)),
      expired: a.expires_ms !== null && Number(a.expires_ms) <= now,
    })),
    [
      { header: 'NAME', value: (a) => a.name },
      { header: 'CREATED', value: (a) => a.created_at },
      { header: 'LAST USED', value: (a) => a.last_used_at ?? 'never' },
      {
        header: 'EXPIRES',
        value: (a) => (a.expires_at === null ? 'never' : `${a.expires_at}${a.expired ? ' (expired)' : ''}`),
        style: (a) => expiryStyle(a.expires_at),
      },
    ],
    { json: o.json === true, empty: `no administrators yet: ${invokedAs('edgegate')} admin add NAME` },
  )
}

export async function adminRotate(o: Opts, name: string): Promise<void> {
  const expiresMs = await tokenExpiry(o)
  const { newToken } = await import('../auth/tokens.ts')
  const token = newToken('admin')
  await withDatabase(o, (d) =>
    d.db.transaction().execute(async (trx) => {
      if (!(await replaceAdminToken(trx, name, token.hash, expiresMs)))
        throw new CliError(`no administrator ${esc(name)}`)
      await audit(trx, actor(), 'admin.rotate_token', name)
    }),
  )
  out(`token: ${token.token}`)
  out(
    `The previous token and its dashboard sessions no longer work. Store this one now: it is shown only once${worksUntil(expiresMs)}.`,
  )
}

export async function adminRemove(o: Opts, name: string): Promise<void> {
  await withDatabase(o, async (d) => {
    if (!(await removeAdmin(d.db, name))) throw new CliError(`no administrator ${esc(name)}`)
    await audit(d.db, actor(), 'admin.remove', name)
  })
  out(`administrator ${name} removed (its token and sessions no longer work)`)
}

function instanceOf(o: Opts): string {
  if (typeof o.instance !== 'string') throw new UsageError('instance: required (set --instance ID)')
  return o.instance
}

export async function decide(o: Opts, status: Verdict, fp: string): Promise<void> {
  const instanceId = instanceOf(o)
  const { changeDecision, parseExpiry } = await decisionService()
  let expiresInMs: number | undefined
  if (o.for !== undefined) {
    try {
      expiresInMs = parseExpiry(String(o.for))
    } catch {
      throw new UsageError(`for: ${esc(String(o.for))} is not a duration from 1m to 8760h (e.g. 30m, 4h, 168h)`)
    }
  }
  const d = await withDatabase(o, (x) =>
    changeDecision(x.db, x.kind, {
      instanceId,
      fingerprint: fp,
      status,
      ...(o.label !== undefined ? { label: o.label as string } : {}),
      ...(expiresInMs !== undefined ? { expiresInMs } : {}),
      actor: actor(),
    }),
  )
  const until = d.expires_at ? ` until ${d.expires_at}` : ''
  // Decision times carry microseconds on the wire; here they read as in `decision list`.
  const at = formatMillis(parseMillis(d.updated_at) ?? Date.now())
  out(`${esc(d.scope_id)} ${d.fingerprint} ${d.status}${d.label ? ` (${esc(d.label)})` : ''} at ${at}${until}`)
}

export async function decisionImport(o: Opts, file: string): Promise<void> {
  const { readFileSync } = await import('node:fs')
  const { importDecisions, ImportError, parseDecisionFile } = await import('../decisions/import.ts')
  let text: string
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8')
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`)
  }
  const dryRun = o.dryRun === true
  try {
    const { entries, skipped } = parseDecisionFile(text, o.instance as string | undefined)
    const result = await withDatabase(o, (d) => importDecisions(d.db, d.kind, entries, actor(), dryRun))
    const by = { approved: 0, blocked: 0, pending: 0 }
    for (const e of result.changed) by[e.status]++
    if (o.json === true) {
      out(terminalJson({ dry_run: dryRun, changed: by, unchanged: result.unchanged, skipped }, 2))
      return
    }
    const skip = [
      skipped.automated > 0 ? `${skipped.automated} automated` : '',
      skipped.undecided > 0 ? `${skipped.undecided} undecided` : '',
      skipped.expired > 0 ? `${skipped.expired} already expired` : '',
    ].filter(Boolean)
    out(
      `${dryRun ? 'would import' : 'imported'} ${result.changed.length} decision${result.changed.length === 1 ? '' : 's'} (${by.approved} approved, ${by.blocked} blocked, ${by.pending} pending); ${result.unchanged} already as in the file${skip.length > 0 ? `; skipped ${skip.join(', ')}` : ''}`,
    )
  } catch (err) {
    if (err instanceof ImportError) throw new CliError(`${file}: ${err.message}; nothing was imported`)
    throw err
  }
}

export async function enroll(o: Opts): Promise<void> {
  const instanceId = instanceOf(o)
  const limit = Number(o.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new UsageError('--limit must be an integer from 1 to 10000')
  }
  const [{ enrollWaiting }, { sinceOf }] = await Promise.all([import('../decisions/enroll.ts'), import('./reports.ts')])
  const dryRun = o.dryRun === true
  const done = await withDatabase(o, (x) =>
    enrollWaiting(x.db, x.kind, {
      instanceId,
      ...(o.since !== undefined ? { sinceMs: sinceOf(o.since as string) } : {}),
      label: (o.label as string | undefined) ?? 'enrolled',
      actor: actor(),
      limit,
      dryRun,
    }),
  )
  const rows = done.map((f) => ({ fingerprint: f.fingerprint, last_seen: formatMillis(f.last_seen_ms) }))
  if (o.json === true) return out(terminalJson({ instance_id: instanceId, dry_run: dryRun, approved: rows }, 2))
  for (const r of rows) out(`${esc(r.fingerprint)}  last seen ${r.last_seen}`)
  out(
    dryRun
      ? `${rows.length} fingerprint(s) of ${esc(instanceId)} would be approved (dry run: nothing changed)`
      : `${rows.length} fingerprint(s) of ${esc(instanceId)} approved`,
  )
}

export async function label(o: Opts, fp: string, text: string): Promise<void> {
  const instanceId = instanceOf(o)
  const { changeDecision } = await decisionService()
  const d = await withDatabase(o, (x) =>
    changeDecision(x.db, x.kind, { instanceId, fingerprint: fp, label: text, actor: actor() }),
  )
  out(`${esc(d.scope_id)} ${d.fingerprint} labelled ${esc(JSON.stringify(d.label))}`)
}

export async function remove(o: Opts, fp: string): Promise<void> {
  const instanceId = instanceOf(o)
  const { removeDecision } = await decisionService()
  await withDatabase(o, (x) => removeDecision(x.db, x.kind, instanceId, fp, actor()))
  out(`${esc(instanceId)} ${esc(fp)} decision deleted`)
}
