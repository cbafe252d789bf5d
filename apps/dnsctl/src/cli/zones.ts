/**
 * The CLI over the dnsctl API: zones (list, create, export, import, delete), RRsets (list, set,
 * delete), diff (a dry-run import printed record by record, like octoDNS's plan), history and
 * rollback. Every write sends the revision it read (If-Match), so a concurrent change is refused
 * with 412 instead of being overwritten.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { paint, printList } from '@gatehouse/kit/cli/output.ts'
import { CliError, invokedAs, UsageError } from '@gatehouse/kit/cli/program.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { decodeZoneBytes, NotUtf8Error } from '../zonefile/utf8.ts'
import type { ZoneDiff } from '../zones/diff.ts'
import { apiOf, zonePath } from './client.ts'

type Opts = Record<string, unknown>
const out = (text: string) => void process.stdout.write(text)

interface ZoneSummary {
  name: string
  role: string
  revision: string
  serial: number
  records: number
}

function printDiff(zone: string, diff: ZoneDiff): void {
  out(
    `${escapeTerminal(zone)}: ${diff.added} to add, ${diff.removed} to remove, ${diff.unchanged} unchanged${diff.records.length === 0 ? ' (no changes)' : ''}\n`,
  )
  for (const r of diff.records) {
    const text = `${r.op === 'add' ? '+' : '-'} ${escapeTerminal(r.record)}`
    out(`${paint(r.op === 'add' ? 'green' : 'red', text)}\n`)
  }
}

/** How errors name a zone file: its path, or stdin for `-`. */
const sourceName = (file: string) => (file === '-' ? 'stdin' : file)

/**
 * A zone file's text. Bytes that are not UTF-8 (a Latin-1 file) are refused, naming the line:
 * decoded leniently they became U+FFFD and were published as other octets than the file's.
 */
function readZoneFile(file: string): string {
  let bytes: Buffer
  try {
    bytes = file === '-' ? readFileSync(0) : readFileSync(file)
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  let text: string
  try {
    text = decodeZoneBytes(bytes)
  } catch (err) {
    if (err instanceof NotUtf8Error) throw new CliError(`${sourceName(file)}:${err.line}: ${err.message}`)
    throw err
  }
  if (text.trim() === '') throw new CliError(`${sourceName(file)} is empty: no zone text to send`)
  return text
}

/** The zone's current revision, or undefined when dnsctl does not manage it. */
async function currentRevision(api: ReturnType<typeof apiOf>, zone: string): Promise<string | undefined> {
  const res = await api.request('GET', zonePath(zone), { accept: [404] })
  if (res.status === 404) {
    await res.text()
    return undefined
  }
  await res.text()
  return res.headers.get('etag')?.replace(/^"|"$/g, '')
}

function ifMatch(revision: string | undefined): Record<string, string> {
  return revision === undefined ? {} : { 'if-match': `"${revision}"` }
}

export async function zoneList(o: Opts): Promise<void> {
  const { body } = await apiOf(o).json<{ zones: ZoneSummary[] }>('GET', '/v1/zones')
  printList(
    body.zones,
    [
      { header: 'ZONE', value: (z) => z.name },
      { header: 'ROLE', value: (z) => z.role },
      { header: 'SERIAL', value: (z) => z.serial },
      { header: 'RECORDS', value: (z) => z.records },
      { header: 'REVISION', value: (z) => z.revision },
    ],
    {
      json: o.json === true,
      empty: `no zones yet: ${invokedAs('dnsctl')} zone create example.com --ns ns1 --ns-address 192.0.2.1 (or zone import a zone file)`,
    },
  )
}

const NAME = /^(?=.{1,253}\.?$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.?$/i

function absolute(name: string, zone: string): string {
  if (name.endsWith('.')) return name
  return `${name}.${zone}.`
}

const MAX_TTL = 2_147_483_647

/** A flag holding a whole number of seconds (or a serial) from 0 to `max`. */
function integerFlag(flag: string, value: unknown, max: number): number {
  const text = String(value)
  const n = Number(text)
  if (!/^\d+$/.test(text) || n > max) {
    throw new UsageError(`${flag} must be an integer from 0 to ${max}, got ${JSON.stringify(text)}`)
  }
  return n
}

/**
 * The SOA's responsible mailbox (RFC 1035 §8) from --email: `local@domain` becomes
 * `local.domain.`; a name without `@` is taken as that form already. A dot inside the local part
 * would need an escape (`first\.last`), which dnsctl's names do not take: refused, rather than
 * turned into another address (first.last@example.com read back as first@last.example.com).
 */
function contact(email: string | undefined, origin: string): string {
  if (email === undefined) return absolute('hostmaster', origin)
  const at = email.indexOf('@')
  if (at === -1) {
    if (!NAME.test(email)) throw new UsageError(`--email ${JSON.stringify(email)} is not an address or a DNS name`)
    return absolute(email, origin)
  }
  const local = email.slice(0, at)
  const domain = email.slice(at + 1).replace(/\.$/, '')
  if (!/^[a-z0-9_-]{1,63}$/i.test(local) || !NAME.test(domain)) {
    throw new UsageError(
      `--email ${JSON.stringify(email)}: give local@domain, with letters, digits, "-" or "_" before the @ (no dots)`,
    )
  }
  return `${local}.${domain}.`
}

/** The zone text `zone create` sends: an SOA and NS records from the flags, with glue for in-zone servers. */
export function newZoneText(zone: string, o: Opts, now = new Date()): string {
  const origin = `${zone.replace(/\.$/, '').toLowerCase()}`
  if (!NAME.test(origin)) throw new UsageError(`zone name ${JSON.stringify(zone)} is not a DNS name`)
  for (const n of (o.ns as string[] | undefined) ?? []) {
    if (!NAME.test(n)) throw new UsageError(`--ns ${JSON.stringify(n)} is not a DNS name`)
  }
  const ns = ((o.ns as string[] | undefined) ?? ['ns1']).map((n) => absolute(n, origin))
  const addresses = (o.nsAddress as string[] | undefined) ?? []
  for (const a of addresses) {
    if (isIP(a) === 0) throw new UsageError(`--ns-address ${JSON.stringify(a)} is not an IPv4 or IPv6 address`)
  }
  const inZone = ns.filter((n) => n === `${origin}.` || n.endsWith(`.${origin}.`))
  if (inZone.length > 0 && addresses.length === 0) {
    throw new UsageError(
      `name server ${inZone[0]} is inside the zone and needs an address: give --ns-address IP (or --ns with a name outside the zone)`,
    )
  }
  const serial =
    o.serial === undefined
      ? Number(`${now.toISOString().slice(0, 10).replaceAll('-', '')}01`)
      : integerFlag('--serial', o.serial, 4_294_967_295)
  const rname = contact(o.email as string | undefined, origin)
  const [ttl, refresh, retry, expire, minimum] = (['ttl', 'refresh', 'retry', 'expire', 'minimum'] as const).map((k) =>
    integerFlag(`--${k}`, o[k], MAX_TTL),
  )
  const lines = [
    `$ORIGIN ${origin}.`,
    `$TTL ${ttl}`,
    `@ IN SOA ${ns[0]} ${rname} ${serial} ${refresh} ${retry} ${expire} ${minimum}`,
    ...ns.map((n) => `@ IN NS ${n}`),
  ]
  for (const n of inZone) for (const a of addresses) lines.push(`${n} IN ${a.includes(':') ? 'AAAA' : 'A'} ${a}`)
  return `${lines.join('\n')}\n`
}

export async function zoneCreate(o: Opts, zone: string): Promise<void> {
  const api = apiOf(o)
  const text = newZoneText(zone, o)
  const dry = o.dryRun === true
  // Without a revision the API refuses to replace a zone it has (428): say so in create's terms.
  const res = await api.request('PUT', `${zonePath(zone)}?role=primary&dry_run=${dry}`, { text, accept: [428] })
  if (res.status === 428) {
    await res.text()
    throw new CliError(
      `zone ${zone.replace(/\.$/, '')} already exists at ${api.base} (dnsctl zone import replaces it, dnsctl zone delete removes it)`,
    )
  }
  const body = (await res.json()) as ZoneSummary & { diff?: ZoneDiff; warnings: string[] }
  if (dry) return printDiff(body.name, body.diff!)
  out(`zone ${body.name} created: serial ${body.serial}, ${body.records} records, revision ${body.revision}\n`)
  for (const w of body.warnings) process.stderr.write(`dnsctl: warning: ${escapeTerminal(w)}\n`)
}

export async function zoneExport(o: Opts, zone: string, file: string | undefined): Promise<void> {
  const { body } = await apiOf(o).json<{ zone_text: string; revision: string }>('GET', zonePath(zone))
  if (file === undefined || file === '-') return out(body.zone_text)
  try {
    writeFileSync(file, body.zone_text)
  } catch (err) {
    throw new CliError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  process.stderr.write(`dnsctl: wrote ${file} (revision ${body.revision})\n`)
}

/** --role, checked before anything is read. */
function roleOf(o: Opts): 'primary' | 'secondary' {
  const role = (o.role as string | undefined) ?? 'primary'
  if (role !== 'primary' && role !== 'secondary')
    throw new UsageError(`--role must be primary or secondary, got ${JSON.stringify(role)}`)
  return role
}

/**
 * Import (or diff) a zone text: a dry run returns the record-level difference. `source` names
 * the text in errors: a refusal at a line of it reads `FILE:LINE: why (code)`, like a compiler's.
 */
async function putText(o: Opts, zone: string, text: string, dry: boolean, source: string) {
  const role = roleOf(o)
  const api = apiOf(o)
  const revision = await currentRevision(api, zone)
  const res = await api.request('PUT', `${zonePath(zone)}?role=${role}&dry_run=${dry}`, {
    text,
    headers: ifMatch(revision),
    accept: [400],
  })
  if (res.status === 400) {
    const error = ((await res.json()) as { error?: { code?: string; message?: string } }).error
    const at = /^line (\d+): ([\s\S]*)$/.exec(error?.message ?? '')
    const why = at ? `${source}:${at[1]}: ${at[2]}` : `${source}: ${error?.message ?? 'refused'}`
    throw new CliError(`${why} (${error?.code ?? 'HTTP 400'})`)
  }
  return {
    body: (await res.json()) as ZoneSummary & {
      diff?: ZoneDiff
      created: boolean
      changed?: boolean
      warnings: string[]
    },
  }
}

export async function zoneImport(o: Opts, zone: string, file: string): Promise<void> {
  const dry = o.dryRun === true
  roleOf(o)
  const { body } = await putText(o, zone, readZoneFile(file), dry, sourceName(file))
  if (dry) return printDiff(body.name, body.diff!)
  // An API from before `changed` existed always published.
  if (body.changed === false) return out(`zone ${body.name} unchanged (serial ${body.serial}): nothing published\n`)
  out(
    `zone ${body.name} ${body.created ? 'created' : 'imported'}: serial ${body.serial}, ${body.records} records, revision ${body.revision}\n`,
  )
}

export async function diff(o: Opts, zone: string, file: string): Promise<void> {
  roleOf(o)
  const { body } = await putText(o, zone, readZoneFile(file), true, sourceName(file))
  if (o.json === true) return out(`${terminalJson(body.diff, 2)}\n`)
  printDiff(body.name, body.diff!)
}

export async function zoneDelete(o: Opts, zone: string): Promise<void> {
  const api = apiOf(o)
  const revision = await currentRevision(api, zone)
  if (revision === undefined) throw new CliError(`zone ${zone} is not managed by dnsctl at ${api.base}`)
  await api.json('DELETE', zonePath(zone), { headers: ifMatch(revision) })
  out(`zone ${zone.replace(/\.$/, '')} deleted (its history is kept)\n`)
}

interface RRset {
  name: string
  type: string
  ttl: number
  records: string[]
}

export async function rrsetList(o: Opts, zone: string): Promise<void> {
  const { body } = await apiOf(o).json<{ rrsets: RRset[] }>('GET', `${zonePath(zone)}/rrsets`)
  printList(
    body.rrsets.flatMap((s) => s.records.map((r) => ({ name: s.name || '@', ttl: s.ttl, type: s.type, data: r }))),
    [
      { header: 'NAME', value: (r) => r.name },
      { header: 'TTL', value: (r) => r.ttl },
      { header: 'TYPE', value: (r) => r.type },
      { header: 'DATA', value: (r) => r.data },
    ],
    { json: o.json === true, ...(o.json === true ? { toJson: (r) => r } : {}) },
  )
}

/** An owner name as the rrsets listing shows it: relative to the zone, lower case, "@" for the apex. */
export function listedName(name: string, zone: string): string {
  const lower = name.toLowerCase()
  const origin = `${zone.replace(/\.$/, '').toLowerCase()}.`
  if (lower === '' || lower === '@' || lower === origin) return '@'
  return lower.endsWith(`.${origin}`) ? lower.slice(0, -origin.length - 1) : lower
}

async function change(o: Opts, zone: string, c: Record<string, unknown>): Promise<void> {
  const api = apiOf(o)
  const { body: current, etag } = await api.json<{ rrsets: RRset[] }>('GET', `${zonePath(zone)}/rrsets`)
  if (c.action === 'upsert' && c.ttl === undefined) {
    // Keep the RRset's TTL when it exists; a new RRset gets the TTL of the apex SOA. The API
    // lists owners relative and lower-case, the apex as "@"; the name given may be "" (for
    // @), absolute or in another case: compare it in the listing's form.
    const owner = listedName(c.name as string, zone)
    const same = current.rrsets.find((s) => s.name === owner && s.type === c.type)
    const soa = current.rrsets.find((s) => s.type === 'SOA')
    c.ttl = same?.ttl ?? soa?.ttl ?? 3600
  }
  const dry = o.dryRun === true
  const { body } = await api
    .json<{ zone: string; serial: number; revision: string; changed?: boolean; diff?: ZoneDiff }>(
      'POST',
      `${zonePath(zone)}/changes`,
      {
        body: { changes: [c], dry_run: dry },
        headers: ifMatch(etag),
      },
    )
    .catch((err: unknown) => {
      throw err instanceof CliError ? new CliError(inArguments(err.message, (c.records as string[]) ?? [])) : err
    })
  if (dry) return printDiff(body.zone, body.diff!)
  if (body.changed === false) {
    return out(
      `${body.zone}: ${escapeTerminal(`${c.name || '@'} ${c.type}`)} unchanged (serial ${body.serial}): nothing published\n`,
    )
  }
  out(
    `${body.zone}: ${c.action === 'upsert' ? 'set' : 'deleted'} ${escapeTerminal(`${c.name || '@'} ${c.type}`)}; serial ${body.serial}, revision ${body.revision}\n`,
  )
}

/**
 * The API names a bad record by its place in the request body (`changes[0].records[1]: ...`),
 * which the user of `rrset set` never wrote: name it by the argument instead. Each RECORD is one
 * argument, so `rrset set ZONE @ MX 10 mail` sends the records "10" and "mail"; when a record
 * has too few fields and there were several arguments, say to quote it.
 */
function inArguments(message: string, records: readonly string[]): string {
  const bad = /^changes\[0\]\.records\[(\d+)\]: (.*)$/s.exec(message)
  if (!bad) return message.replace(/^changes\[0\]: /, '')
  const i = Number(bad[1])
  // The API's message ends with its code: a hint goes before it.
  const [, why, code = ''] = /^(.*?)( \(\w+\))?$/s.exec(bad[2]!)!
  const hint =
    records.length > 1 && /\(\d+ fields?\), got \d+/.test(why!)
      ? `; each RECORD is one argument: quote a record that has spaces, e.g. "${records.join(' ')}"`
      : ''
  return `record ${i + 1} of ${records.length} (${JSON.stringify(records[i] ?? '')}): ${why}${hint}${code}`
}

export function rrsetSet(o: Opts, zone: string, name: string, type: string, records: string[]): Promise<void> {
  let ttl: number | undefined
  if (o.ttl !== undefined) {
    ttl = Number(o.ttl)
    if (!Number.isInteger(ttl) || ttl < 0 || ttl > 2_147_483_647)
      throw new UsageError(`--ttl must be an integer from 0 to 2147483647, got ${JSON.stringify(o.ttl)}`)
  }
  return change(o, zone, {
    action: 'upsert',
    name: name === '@' ? '' : name,
    type: type.toUpperCase(),
    ...(ttl !== undefined ? { ttl } : {}),
    records,
  })
}

export function rrsetDelete(o: Opts, zone: string, name: string, type: string): Promise<void> {
  return change(o, zone, { action: 'delete', name: name === '@' ? '' : name, type: type.toUpperCase() })
}

interface HistoryItem {
  id: number
  revision: string
  role: string
  serial: number
  bytes: number
  saved_at: string
  replaced_by: string
}

export async function history(o: Opts, zone: string): Promise<void> {
  const limit = Number(o.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
    throw new UsageError('--limit must be an integer from 1 to 1000')
  const api = apiOf(o)
  const { body } = await api.json<{ history: HistoryItem[] }>('GET', `${zonePath(zone)}/history?limit=${limit}`)
  if (body.history.length === 0 && o.json !== true) {
    // A bare header says nothing: a zone with no prior revision yet, or a name that was never a
    // zone (a mistyped one), which the zone's own endpoint tells apart (404 zone_not_found).
    const { body: z } = await api.json<{ zone: string }>('GET', `${zonePath(zone)}/rrsets`)
    out(
      `${escapeTerminal(z.zone)} has no prior revisions yet: every change (rrset set, import, rollback) keeps the one it replaces\n`,
    )
    return
  }
  printList(
    body.history,
    [
      { header: 'REVISION', value: (h) => h.revision },
      { header: 'SERIAL', value: (h) => h.serial },
      { header: 'SAVED', value: (h) => h.saved_at },
      { header: 'REPLACED BY', value: (h) => h.replaced_by },
      { header: 'BYTES', value: (h) => h.bytes },
    ],
    { json: o.json === true },
  )
}

/**
 * The revision `given` names: a revision id as `dnsctl history` prints it, or a serial (what
 * `kdig SOA` and the history's SERIAL column show), standing for the newest prior revision
 * that had it (a zone deleted and created again can repeat one). Ids are 27 characters, so a
 * number of up to ten digits is always a serial.
 */
async function priorRevision(api: ReturnType<typeof apiOf>, zone: string, given: string): Promise<string> {
  if (!/^\d{1,10}$/.test(given)) return given
  // Page through the whole history, newest first: a busy zone keeps more than one page.
  let before: number | null = null
  do {
    const query: string = `limit=1000${before === null ? '' : `&before=${before}`}`
    const { body } = await api.json<{ history: HistoryItem[]; next_before: number | null }>(
      'GET',
      `${zonePath(zone)}/history?${query}`,
    )
    const match = body.history.find((h) => h.serial === Number(given))
    if (match) return match.revision
    before = body.next_before
  } while (before !== null)
  throw new CliError(
    `the history of ${zone} holds no revision with serial ${given} (dnsctl history ${zone} lists them)`,
  )
}

export async function rollback(o: Opts, zone: string, given: string): Promise<void> {
  const api = apiOf(o)
  const revision = await priorRevision(api, zone, given)
  const { body: prior } = await api.json<{ zone_text: string; role: string }>(
    'GET',
    `${zonePath(zone)}/history/${encodeURIComponent(revision)}`,
  )
  const dry = o.dryRun === true
  const { body } = await putText({ ...o, role: prior.role }, zone, prior.zone_text, dry, `revision ${revision}`)
  if (dry) return printDiff(body.name, body.diff!)
  if (body.changed === false) {
    return out(
      `zone ${body.name} unchanged (serial ${body.serial}): it already has the content of ${revision}, nothing published\n`,
    )
  }
  out(`zone ${body.name} rolled back to the content of ${revision}: serial ${body.serial}, revision ${body.revision}\n`)
}
