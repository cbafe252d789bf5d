/**
 * Importing decisions in bulk (`edgegate decision import`): moving an installation (SQLite to
 * PostgreSQL, one control plane to another), keeping approvals in a file under version control,
 * or bringing a gate that ran on its own under the control plane with the verdicts given on it.
 * Two shapes are read:
 *
 * - what `edgegate decision list --json` prints: `{scope_id, fingerprint, status, label, source,
 *   expires_at?}`; decisions of an automated controller (`source` other than `manual`) are
 *   skipped: they carry evidence, and the controller makes them again from live evidence. A
 *   manual decision's `expires_at` is kept; one already past is skipped (it has ended);
 * - what `sshproxy list --json` and `tlsgate list --json` print, with `--instance` naming the
 *   gate: `{fingerprint, verdict, decided, label, expires_at}`; undecided entries are skipped,
 *   and a verdict the gate held for a while (`block --for`) keeps its end, as above.
 *
 * The whole file is checked before anything is written, and then written in one transaction: a
 * bad entry is named (by its index) and nothing changes. An entry equal to the live decision
 * (same status, label and expiry) is left as it is, so importing the same file twice changes nothing
 * the second time. Each change gets a fresh decision time (gates pull it), `manual` as source
 * and the importer as actor, and is audited like any decision.
 */
import type { DatabaseKind } from '@gatehouse/kit/db/database.ts'
import { FINGERPRINT_PATTERN, INSTANCE_ID_PATTERN, type Verdict } from '@gatehouse/kit/edge-wire.ts'
import type { Kysely, Transaction } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB, NewDecision } from '../db/schema.ts'
import { canonicalFingerprint } from './fingerprints.ts'
import { checkLabel } from './service.ts'
import { decisionsFor, SCOPE_INSTANCE, tickClock, upsertDecisions } from './store.ts'

const VERDICTS: readonly string[] = ['approved', 'blocked', 'pending']
const FINGERPRINT = new RegExp(FINGERPRINT_PATTERN)
const INSTANCE = new RegExp(INSTANCE_ID_PATTERN)
/** Entries one file may hold. */
export const IMPORT_LIMIT = 100_000

export interface ImportEntry {
  instanceId: string
  fingerprint: string
  status: Verdict
  label: string
  /** When it ends (ms); null: permanent. */
  expiresMs: number | null
}

export interface ParsedImport {
  entries: ImportEntry[]
  /** Left out: automated decisions, entries a gate holds undecided, expiring ones already ended. */
  skipped: { automated: number; undecided: number; expired: number }
}

/** A file that cannot be imported; the message names the entry. */
export class ImportError extends Error {}

/** Read a decision file (either shape); `instance` names the gate of a gate's list. */
export function parseDecisionFile(text: string, instance?: string): ParsedImport {
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch (err) {
    throw new ImportError(`not JSON: ${(err as Error).message}`)
  }
  if (!Array.isArray(data)) throw new ImportError('expected a JSON array of decisions')
  if (data.length > IMPORT_LIMIT) throw new ImportError(`${data.length} entries: at most ${IMPORT_LIMIT} in one file`)
  if (instance !== undefined && !INSTANCE.test(instance))
    throw new ImportError(`--instance ${instance}: not an instance id`)
  const entries: ImportEntry[] = []
  const skipped = { automated: 0, undecided: 0, expired: 0 }
  const nowMs = Date.now()
  const seen = new Set<string>()
  data.forEach((item: unknown, i) => {
    const where = `entry ${i}`
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw new ImportError(`${where}: not an object`)
    const e = item as Record<string, unknown>
    if (e.source !== undefined && e.source !== 'manual') {
      skipped.automated++
      return
    }
    if (e.decided === false) {
      skipped.undecided++
      return
    }
    const instanceId = e.scope_id ?? instance
    if (instanceId === undefined) {
      throw new ImportError(`${where}: no scope_id; a gate's list needs --instance (the gate it came from)`)
    }
    if (typeof instanceId !== 'string' || !INSTANCE.test(instanceId)) throw new ImportError(`${where}: bad scope_id`)
    if (instance !== undefined && instanceId !== instance) {
      throw new ImportError(`${where}: scope_id ${instanceId} is not --instance ${instance}`)
    }
    if (typeof e.fingerprint !== 'string' || !FINGERPRINT.test(e.fingerprint)) {
      throw new ImportError(`${where}: bad fingerprint`)
    }
    const status = e.status ?? e.verdict
    if (typeof status !== 'string' || !VERDICTS.includes(status)) {
      throw new ImportError(`${where}: status (or verdict) must be approved, blocked or pending`)
    }
    const label = e.label ?? ''
    if (typeof label !== 'string') throw new ImportError(`${where}: label must be a string`)
    try {
      checkLabel(label)
    } catch (err) {
      throw new ImportError(`${where}: ${(err as Error).message}`)
    }
    let expiresMs: number | null = null
    if (e.expires_at !== undefined && e.expires_at !== null) {
      expiresMs = typeof e.expires_at === 'string' ? Date.parse(e.expires_at) : Number.NaN
      if (!Number.isFinite(expiresMs)) throw new ImportError(`${where}: expires_at must be an RFC 3339 time`)
      if (expiresMs <= nowMs) {
        skipped.expired++
        return
      }
    }
    const key = `${instanceId}/${e.fingerprint}`
    if (seen.has(key)) throw new ImportError(`${where}: ${key} appears twice`)
    seen.add(key)
    entries.push({ instanceId, fingerprint: e.fingerprint, status: status as Verdict, label, expiresMs })
  })
  return { entries, skipped }
}

export interface ImportResult {
  /** Entries that change (in a dry run: would). */
  changed: ImportEntry[]
  unchanged: number
}

/**
 * Write the entries in one transaction (none in a dry run). Every instance must be a
 * registered gate: otherwise ImportError naming them, and nothing is written.
 */
export async function importDecisions(
  db: Kysely<DB>,
  kind: DatabaseKind,
  given: readonly ImportEntry[],
  actor: string,
  dryRun: boolean,
): Promise<ImportResult> {
  let entries = given
  const instances = [...new Set(entries.map((e) => e.instanceId))]
  if (instances.length > 0) {
    const gates = await db
      .selectFrom('nodes')
      .select(['instance_id', 'kind'])
      .where('instance_id', 'in', instances)
      .where('kind', 'in', ['sshgate', 'tlsgate'])
      .execute()
    const known = new Map(gates.map((g) => [g.instance_id, g.kind]))
    const unknown = instances.filter((i) => !known.has(i))
    if (unknown.length > 0) {
      throw new ImportError(`not registered gates: ${unknown.join(', ')} (edgegate node add --kind sshgate|tlsgate)`)
    }
    // Stored as the gate computes it (lower case); an SSH gate's has one form (the spec's), a TLS
    // gate's is taken as written when it is not a JA4 (a gate of another make).
    const seen = new Set<string>()
    entries = entries.map((e) => {
      const kind = known.get(e.instanceId)!
      const canonical = canonicalFingerprint(kind, e.fingerprint)
      if (canonical === undefined && kind === 'sshgate') {
        throw new ImportError(
          `${e.instanceId}/${JSON.stringify(e.fingerprint.slice(0, 80))}: an SSH gate fingerprint is 32 hexadecimal characters`,
        )
      }
      const fingerprint = canonical ?? e.fingerprint
      const key = `${e.instanceId}/${fingerprint}`
      if (seen.has(key)) throw new ImportError(`${key} appears twice`)
      seen.add(key)
      return { ...e, fingerprint }
    })
  }
  const run = async (trx: Transaction<DB>) => {
    // The clock first (its lock), then the reads: no verdict can land between the two.
    const first = dryRun || entries.length === 0 ? 0 : await tickClock(trx, kind, entries.length)
    const live = await decisionsFor(
      trx,
      entries.map((e) => ({ instance_id: e.instanceId, fingerprint: e.fingerprint })),
    )
    const changed: ImportEntry[] = []
    const rows: NewDecision[] = []
    let unchanged = 0
    for (const e of entries) {
      const now = live.get(`${e.instanceId}/${e.fingerprint}`)
      const expires = now?.expires_ms == null ? null : Number(now.expires_ms)
      if (now && now.status === e.status && now.label === e.label && expires === e.expiresMs) {
        unchanged++
        continue
      }
      changed.push(e)
      rows.push({
        scope_type: SCOPE_INSTANCE,
        scope_id: e.instanceId,
        fingerprint: e.fingerprint,
        status: e.status,
        label: e.label,
        updated_us: first + rows.length,
        actor,
        source: 'manual',
        expires_ms: e.expiresMs,
        evidence: null,
      })
    }
    if (!dryRun) {
      // In slices: one statement's parameters stay far below SQLite's and PostgreSQL's limits.
      for (let i = 0; i < rows.length; i += 500) await upsertDecisions(trx, rows.slice(i, i + 500))
      for (const e of changed) await audit(trx, actor, `decision.${e.status}`, `${e.instanceId}/${e.fingerprint}`)
    }
    return { changed, unchanged }
  }
  return db.transaction().execute(run)
}
