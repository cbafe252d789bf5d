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
      io.out(`${fp} ${verdict}${until}${label === undefined ? '' : ` (label ${JSON.stringify(label)})`}\n`)
    },
    async labelCommand(dbPath: string, fingerprint: string, label: string, io: { out(text: string): void }) {
      const fp = o.checkFingerprint(fingerprint)
      const checked = o.checkLabel(label)
      const ok = await withStore(dbPath, (s) => setLabel(s.db, fp, checked, new Date().toISOString()))
      if (!ok) throw o.notFound(fp)
      io.out(`${fp} label ${JSON.stringify(checked)}\n`)
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
