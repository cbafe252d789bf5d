/**
 * The store commands both gates share (sshproxy, tlsgate): `approve`/`block`/`pending` (with
 * an optional label, and `--for` a while), `label` and `delete`, each opening the SQLite file `serve` uses (whose
 * per-connection verdict read makes a change apply at once) and printing one line. The gate
 * supplies its store opener, argument checks, not-found error and verdict setter.
 */
import { userInfo } from 'node:os'
import type { Kysely } from 'kysely'
import type { Database } from '../db/database.ts'
import { parseDecisionExpiry } from '../edge-limits.ts'
import { kitErrors } from '../errors.ts'
import { deleteEntry, type GateStoreDB, type GateVerdict, setLabel, type VerdictChange } from '../gate-store.ts'
import { gateStatusOf, verdictText } from '../gate-verdict.ts'
import { terminalJson } from '../terminal.ts'
import { type Column, formatTable } from './output.ts'

export interface GateEntryCommandsOptions<S extends GateStore> {
  /**
   * Open an existing store (never create one from a CLI typo); `readsOnly` for the commands
   * that only read (the kit's `DatabaseOptions.readsOnly`).
   */
  open(path: string, readsOnly: boolean): Promise<S>
  checkFingerprint(text: string): string
  checkLabel(text: string): string
  notFound(fingerprint: string): Error
  setVerdict(db: S['db'], fingerprint: string, change: VerdictChange): Promise<boolean>
}

/** What a verdict command was given beside the fingerprint. */
export interface VerdictOptions {
  label?: string | undefined
  /** `--for`: a duration (1m to 8760h); the verdict then ends (counts as pending). */
  for?: string | undefined
}

/** `--for`'s duration in milliseconds, or a usage error (exit 2) saying what is accepted. */
export function parseFor(text: string): number {
  const ms = parseDecisionExpiry(text)
  if (ms === undefined)
    throw kitErrors.invalid_request(
      `--for ${JSON.stringify(text)}: a duration from 1m to 8760h, written like 30m, 4h or 168h`,
    )
  return ms
}

/** What the commands need of a gate's store: the kit `Database` it is. */
type GateStore = { db: Kysely<GateStoreDB>; close(): Promise<void> } & Pick<Database<unknown>, 'kind' | 'sqlite'>

/** Who ran a CLI change: `cli:<user>`. */
export function cliActor(): string {
  try {
    return `cli:${userInfo().username}`
  } catch {
    return 'cli'
  }
}

export function gateEntryCommands<S extends GateStore>(o: GateEntryCommandsOptions<S>) {
  const using = async <T>(dbPath: string, readsOnly: boolean, fn: (store: S) => Promise<T>): Promise<T> => {
    const store = await o.open(dbPath, readsOnly)
    try {
      return await fn(store)
    } finally {
      await store.close()
    }
  }
  const withStore = <T>(dbPath: string, fn: (store: S) => Promise<T>) => using(dbPath, false, fn)
  return {
    /** Open the store `serve` uses for a command that only reads (a list, a status), run `fn`, close it. */
    readStore: <T>(dbPath: string, fn: (store: S) => Promise<T>) => using(dbPath, true, fn),
    async verdictCommand(
      dbPath: string,
      verdict: GateVerdict,
      fingerprint: string,
      options: VerdictOptions,
      io: { out(text: string): void },
    ) {
      const fp = o.checkFingerprint(fingerprint)
      const label = options.label === undefined ? undefined : o.checkLabel(options.label)
      const forMs = options.for === undefined ? undefined : parseFor(options.for)
      const at = Date.now()
      const expiresAt = forMs === undefined ? undefined : new Date(at + forMs).toISOString()
      const now = new Date(at).toISOString()
      const ok = await withStore(dbPath, (s) =>
        o.setVerdict(s.db, fp, { verdict, actor: cliActor(), label, now, expiresAt }),
      )
      if (!ok) throw o.notFound(fp)
      const until = expiresAt === undefined ? '' : ` until ${expiresAt}`
      io.out(`${fp} ${verdict}${until}${label === undefined ? '' : ` (label ${terminalJson(label)})`}\n`)
    },
    async labelCommand(dbPath: string, fingerprint: string, label: string, io: { out(text: string): void }) {
      const fp = o.checkFingerprint(fingerprint)
      const checked = o.checkLabel(label)
      const ok = await withStore(dbPath, (s) => setLabel(s.db, fp, checked, new Date().toISOString()))
      if (!ok) throw o.notFound(fp)
      io.out(`${fp} label ${terminalJson(checked)}\n`)
    },
    /** `backup FILE`: a consistent copy of the store (`cli/backup.ts`, loaded only here). */
    async backupCommand(dbPath: string, file: string, io: { out(text: string): void }) {
      const { backupDatabase } = await import('./backup.ts')
      io.out(`${await using(dbPath, true, async (s) => backupDatabase(s, file))}\n`)
    },
    async deleteCommand(dbPath: string, fingerprint: string, io: { out(text: string): void }) {
      const fp = o.checkFingerprint(fingerprint)
      const ok = await withStore(dbPath, (s) => deleteEntry(s.db, fp))
      if (!ok) throw o.notFound(fp)
      io.out(`${fp} deleted\n`)
    },
  }
}

/** The decoded entry fields `list` prints for every gate. */
export interface GateListEntry {
  fingerprint: string
  verdict: GateVerdict
  decided_at: string | null
  expires_at: string | null
  label: string
  count: number
  first_seen: string
  last_seen: string
  ips: string[]
  ports: number[]
  sightings: unknown[]
}

/** What a gate adds to `list`. */
export interface GateListColumns<E> {
  /** Its own `--json` fields (`verbose`: with -v). */
  json(e: E, verbose: boolean): Record<string, unknown>
  /** Its own table columns, between LAST SEEN and IPS. */
  columns: Column<E>[]
  /** With -v, the lines under each row, indented by the caller; the gate escapes what it prints. */
  verboseLines(e: E): string[]
}

/**
 * `list`: the entries as a table (a blocked verdict in red; an expiring one with its end), with
 * -v the gate's lines under each row, or `--json`.
 */
export function printGateList<E extends GateListEntry>(
  entries: E[],
  gate: GateListColumns<E>,
  options: { verbose: boolean; json: boolean },
  io: { out(text: string): void },
): void {
  if (options.json) {
    const out = entries.map((e) => ({
      fingerprint: e.fingerprint,
      verdict: e.verdict,
      decided: e.decided_at !== null,
      expires_at: e.expires_at,
      label: e.label,
      count: e.count,
      first_seen: e.first_seen,
      last_seen: e.last_seen,
      ips: e.ips,
      ports: e.ports,
      sightings: e.sightings,
      ...gate.json(e, options.verbose),
    }))
    io.out(`${terminalJson(out, 2)}\n`)
    return
  }
  if (entries.length === 0) {
    io.out('no fingerprints stored yet\n')
    return
  }
  const now = Date.now()
  const columns: Column<E>[] = [
    { header: 'FINGERPRINT', value: (e) => e.fingerprint },
    {
      header: 'VERDICT',
      value: (e) => verdictText(e, now),
      style: (e) => (gateStatusOf(e, now) === 'blocked' ? 'red' : undefined),
    },
    { header: 'COUNT', value: (e) => e.count },
    { header: 'LAST SEEN', value: (e) => e.last_seen },
    ...gate.columns,
    { header: 'IPS', value: (e) => e.ips.slice(0, 3).join(',') + (e.ips.length > 3 ? `,+${e.ips.length - 3}` : '') },
    { header: 'LABEL', value: (e) => e.label },
  ]
  // The table's cells are escaped by formatTable.
  const lines = formatTable(columns, entries).trimEnd().split('\n')
  if (!options.verbose) {
    io.out(`${lines.join('\n')}\n`)
    return
  }
  const out = [lines[0]!]
  for (const [i, e] of entries.entries()) out.push(lines[i + 1]!, ...gate.verboseLines(e).map((l) => `    ${l}`))
  io.out(`${out.join('\n')}\n`)
}
