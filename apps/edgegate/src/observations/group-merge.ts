/**
 * Merging observation pages into the stored fingerprint aggregates, in one transaction per group
 * (MergeQueue's group commit): on PostgreSQL one multi-row statement of each kind, prepared, the
 * rows as one joined text per column; on SQLite one-row prepared statements in one synchronous
 * transaction.
 */
import type { DatabaseKind, PreparedQuery } from '@gatehouse/kit'
import type { SyncTransaction } from '@gatehouse/kit/db/database.ts'
import { serverPrepared } from '@gatehouse/kit/db/pg-prepared.ts'
import { CompiledQuery, type Transaction } from 'kysely'
import type { EdgeDatabase } from '../db/open.ts'
import type { DB, FingerprintRow, NewFingerprint } from '../db/schema.ts'
import {
  addSightingRows,
  prepareSyncTlsSightings,
  type SyncTlsSightings,
  storeTlsSightings,
  storeTlsSightingsSync,
  type TlsSightingRows,
  tlsSightingRows,
} from '../web/sightings.ts'
import { type Aggregate, freshSightings, mergeAggregates, mergeIntoRow, toRow } from './merge.ts'

/** The aggregate columns a merge writes (besides the key); the bench's raw-SQL baseline uses the same. */
export const COLUMNS = [
  'reported_status',
  'first_seen_ms',
  'last_seen_ms',
  'count',
  'ips',
  'ports',
  'sightings',
  'oldest_sighting_ms',
  'metadata',
  'updated_ms',
] as const

export const ALL_COLUMNS = ['instance_id', 'fingerprint', ...COLUMNS] as const

// PostgreSQL's row-by-row statements (a group whose values do not fit the joined columns, see
// `pgColumns`), written out once per row count instead of being built through Kysely's query
// builder for every group (a tenth of the server's CPU under ingest when every page took it).
const statements = new Map<string, string>()

function pageSql(rows: number, update: boolean): string {
  const key = `${rows}/${update}`
  let text = statements.get(key)
  if (text === undefined) {
    let n = 0
    const tuple = () => `(${ALL_COLUMNS.map(() => `$${++n}`).join(', ')})`
    const values = Array.from({ length: rows }, tuple).join(', ')
    const conflict = update
      ? `do update set ${COLUMNS.map((c) => `"${c}" = "excluded"."${c}"`).join(', ')}`
      : 'do nothing returning "instance_id", "fingerprint"'
    text = `insert into "fingerprints" (${ALL_COLUMNS.map((c) => `"${c}"`).join(', ')}) values ${values} on conflict ("instance_id", "fingerprint") ${conflict}`
    if (statements.size >= 512) statements.clear()
    statements.set(key, text)
  }
  return text
}

/**
 * PostgreSQL, keys holding U+0001: lock the stored rows of some fingerprints of some instances;
 * `shape` is how many fingerprints of each instance, in the order of the parameters (each
 * instance id followed by its fingerprints).
 */
function lockSql(shape: readonly number[]): string {
  const key = `lock/${shape.join(',')}`
  let text = statements.get(key)
  if (text === undefined) {
    let n = 0
    const terms = shape.map((count) => {
      const instance = `$${++n}`
      return `("instance_id" = ${instance} and "fingerprint" in (${Array.from({ length: count }, () => `$${++n}`).join(', ')}))`
    })
    text = `select * from "fingerprints" where ${terms.join(' or ')} order by "instance_id", "fingerprint" for update`
    if (statements.size >= 512) statements.clear()
    statements.set(key, text)
  }
  return text
}

function pageQuery(rows: NewFingerprint[], update: boolean) {
  const columns = pgColumns(rows)
  if (columns !== undefined) return CompiledQuery.raw(update ? PG_UPSERT : PG_INSERT, columns)
  // In ALL_COLUMNS order, property by property (a keyed loop over the names costs more).
  const params: unknown[] = []
  for (const r of rows) {
    params.push(r.instance_id, r.fingerprint, r.reported_status, r.first_seen_ms, r.last_seen_ms, r.count)
    params.push(r.ips, r.ports, r.sightings, r.oldest_sighting_ms ?? null, r.metadata, r.updated_ms)
  }
  return CompiledQuery.raw(pageSql(rows.length, update), params)
}

// PostgreSQL gets a group's rows as 12 parameters, one per column, instead of 12 per row: each
// column's values joined into one text, every value preceded by a separator, split back into an
// array by `string_to_array` (the leading empty element dropped) and zipped into rows by
// `unnest`. Bound one by one (256 rows x 12 in a group of 16 pages), node-postgres prepared,
// measured and wrote every value in JavaScript while the event loop waited, and PostgreSQL
// parsed and planned a new 3,000-parameter statement for every group
// (docs/performance/edgegate.md, round 5). Text columns are separated by U+0001, which no JSON
// text holds (JSON escapes control characters) and which `pgColumns` checks for anyway; bigint
// columns by commas, their values in the `toString` form node-postgres sends, so the
// `bigint[]` cast parses each exactly as a bound parameter (1.5 or NaN fail as they did), and
// an empty element is NULL. Rows keep their order (`with ordinality`): groups write in key order.
const PG_TEXT: Record<(typeof ALL_COLUMNS)[number], boolean> = {
  instance_id: true,
  fingerprint: true,
  reported_status: true,
  first_seen_ms: false,
  last_seen_ms: false,
  count: false,
  ips: true,
  ports: true,
  sightings: true,
  oldest_sighting_ms: false,
  metadata: true,
  updated_ms: false,
}
const TEXT_SEPARATOR = '\u0001'
/** The group insert on PostgreSQL, its 12 joined columns (`pgColumns`) as parameters; the bench's floor takes it bare. */
export const pgInsert = (conflict = '') => {
  const arrays = ALL_COLUMNS.map((c, i) =>
    PG_TEXT[c] ? `(string_to_array($${i + 1}, chr(1)))[2:]` : `(string_to_array($${i + 1}, ',', ''))[2:]::bigint[]`,
  )
  const names = ALL_COLUMNS.map((c) => `"${c}"`).join(', ')
  const insert = `insert into "fingerprints" (${names}) select ${names} from unnest(${arrays.join(', ')}) with ordinality as "u"(${names}, "n") order by "n"`
  return conflict ? `${insert} on conflict ("instance_id", "fingerprint") ${conflict}` : insert
}
export const PG_INSERT = serverPrepared(pgInsert('do nothing returning "instance_id", "fingerprint"'))
export const PG_UPSERT = serverPrepared(
  pgInsert(`do update set ${COLUMNS.map((c) => `"${c}" = "excluded"."${c}"`).join(', ')}`),
)
/**
 * PostgreSQL: lock and read the stored rows of a chunk's keys, given as two joined texts
 * (instance ids, fingerprints; each value preceded by U+0001), in the order given (key order:
 * groups lock in one order, so two cannot deadlock). One fixed text whatever the chunk, so it
 * runs prepared: the statement with a parameter per key had a new text for every shape of
 * group, parsed and planned each time. Written as a lateral lookup by primary key because a
 * prepared statement keeps a generic plan: as a join, the plan made while the table was young
 * hashed a sequential scan of it, and kept doing so as it grew, until the next ANALYZE (measured
 * 4.5 times slower at 76,000 rows; docs/performance/edgegate.md). The lateral subquery can only
 * be run once per key, by index.
 */
export const PG_LOCK = serverPrepared(
  `select ${ALL_COLUMNS.map((c) => `"s"."${c}"`).join(', ')} from unnest((string_to_array($1, chr(1)))[2:], (string_to_array($2, chr(1)))[2:]) with ordinality as "k"("i", "f", "n") cross join lateral (select ${ALL_COLUMNS.map((c) => `"${c}"`).join(', ')} from "fingerprints" where "instance_id" = "k"."i" and "fingerprint" = "k"."f" for update) as "s" order by "k"."n"`,
)

/**
 * The 12 column parameters of `rows`, or undefined when a value does not fit the format (a
 * text that is not a string or holds U+0001, a bigint that is not a number or null): the caller
 * then binds row by row as before, with the same result or error.
 */
export function pgColumns(rows: readonly NewFingerprint[]): string[] | undefined {
  const out: string[] = []
  for (const c of ALL_COLUMNS) {
    let joined = ''
    if (PG_TEXT[c]) {
      for (const r of rows) {
        const v = r[c]
        if (typeof v !== 'string' || v.includes(TEXT_SEPARATOR)) return undefined
        joined += TEXT_SEPARATOR + v
      }
    } else {
      for (const r of rows) {
        const v = r[c]
        if (v == null) joined += ','
        else if (typeof v === 'number') joined += `,${v}`
        else return undefined
      }
    }
    out.push(joined)
  }
  return out
}

/** One gate's page of observations, as merged in a group. */
export interface MergePage {
  instanceId: string
  incoming: readonly Aggregate[]
  /**
   * A TLS gate's page: its sightings also feed the web candidate report. The ones its stored
   * fingerprints do not hold yet (a gate uploads its 128 newest each time, a few new) are
   * recorded and correlated in the merge's transaction, so the two commit together.
   */
  tls?: boolean
}

/**
 * Merge one page of observations in one transaction. New fingerprints are stored outright;
 * fingerprints already stored are read (PostgreSQL: locked FOR UPDATE, in key order, so
 * concurrent pages for one fingerprint serialise), merged and written back.
 */
export function mergeBatch(
  database: EdgeDatabase,
  instanceId: string,
  incoming: Aggregate[],
  cutoffMs: number,
  now: number,
  tls = false,
): Promise<void> {
  if (incoming.length === 0) return Promise.resolve()
  return mergeGroup(database, [{ instanceId, incoming, tls }], cutoffMs, now)
}

/**
 * Merge the pages of several requests (any instances) in one transaction, all or nothing
 * (MergeQueue's group commit): what merging the pages one after another stores, since the
 * merge is associative (sets, minimum, maximum, newest wins). PostgreSQL: one multi-row
 * statement of each kind (`mergePages`). SQLite: row by row in one synchronous transaction
 * (`mergePagesSync`).
 */
export async function mergeGroup(
  database: EdgeDatabase,
  pages: readonly MergePage[],
  cutoffMs: number,
  now: number,
): Promise<void> {
  const { transactionSync } = database
  if (transactionSync) {
    const statements = sqliteStatements(database)
    await transactionSync((tx) => mergePagesSync(tx, statements, pages, cutoffMs, now))
    return
  }
  await database.db.transaction().execute((trx) => mergePages(trx, database.kind, pages, cutoffMs, now))
}

/** SQLite: a merge's one-row statements, prepared once per database (the bench's raw-SQL baseline runs them too). */
export interface SqliteStatements {
  read: PreparedQuery<FingerprintRow>
  insert: PreparedQuery<unknown>
  update: PreparedQuery<unknown>
  /** TLS gates' pages: recording and correlating their sightings. */
  tls: SyncTlsSightings
}

const sqliteStatementsOf = new WeakMap<EdgeDatabase, SqliteStatements>()

export function sqliteStatements(database: EdgeDatabase): SqliteStatements {
  let out = sqliteStatementsOf.get(database)
  if (out === undefined) {
    const { db } = database
    const key = { instance_id: '', fingerprint: '' }
    // Built with example values; each run passes the values in the statement's order: the
    // insert's ALL_COLUMNS, the update's COLUMNS then the key.
    const example = Object.fromEntries(ALL_COLUMNS.map((c) => [c, ''])) as unknown as NewFingerprint
    const update = Object.fromEntries(COLUMNS.map((c) => [c, ''])) as unknown as Partial<NewFingerprint>
    out = {
      read: database.prepare(
        db
          .selectFrom('fingerprints')
          .selectAll()
          .where('instance_id', '=', key.instance_id)
          .where('fingerprint', '=', key.fingerprint),
      ),
      insert: database.prepare(db.insertInto('fingerprints').values(example)),
      update: database.prepare(
        db
          .updateTable('fingerprints')
          .set(update)
          .where('instance_id', '=', key.instance_id)
          .where('fingerprint', '=', key.fingerprint),
      ),
      tls: prepareSyncTlsSightings(database),
    }
    sqliteStatementsOf.set(database, out)
  }
  return out
}

/**
 * SQLite: the pages merged row by row in the caller's synchronous transaction (`transactionSync`):
 * each fingerprint's stored row read by key, then inserted or merged and updated, each by a
 * prepared one-row statement. SQLite has no round trips, so the multi-row statements PostgreSQL
 * needs only cost here: binding a page's 192 values at once, and for a re-reported fingerprint an
 * insert that finds it stored before the read. With no await between statements, a merge group
 * took 12–20 % less CPU than page-sized statements in a Kysely transaction
 * (docs/performance/edgegate.md, 2026-11-29). A fingerprint twice in a group is read back as
 * this transaction wrote it, and merged again. A TLS gate's sightings are compared with the
 * stored list as read, before it is updated, and the new ones recorded after the merges.
 */
export function mergePagesSync(
  tx: SyncTransaction,
  s: SqliteStatements,
  pages: readonly MergePage[],
  cutoffMs: number,
  now: number,
): void {
  const sightings = new Map<string, TlsSightingRows>()
  for (const { instanceId, incoming, tls } of pages) {
    const recorded = tls ? rowsOf(sightings, instanceId) : undefined
    for (const a of incoming) {
      const row = tx.first(s.read, instanceId, a.fingerprint)
      if (recorded) addSightingRows(recorded, instanceId, a, freshSightings(row?.sightings, a.sightings))
      if (row === undefined) {
        const r = toRow(instanceId, a, now)
        tx.run(s.insert, r.instance_id, r.fingerprint, ...columnValues(r))
      } else {
        tx.run(s.update, ...columnValues(mergeIntoRow(instanceId, row, a, cutoffMs, now)), instanceId, a.fingerprint)
      }
    }
  }
  for (const [instanceId, { rows }] of sightings) storeTlsSightingsSync(tx, s.tls, instanceId, rows)
}

/** The sightings to record of one gate in a group. */
function rowsOf(byGate: Map<string, TlsSightingRows>, instanceId: string): TlsSightingRows {
  let out = byGate.get(instanceId)
  if (out === undefined) {
    out = tlsSightingRows()
    byGate.set(instanceId, out)
  }
  return out
}

/** A row's values of `COLUMNS`, in that order (the one-row statements' parameters after or before the key). */
function columnValues(r: NewFingerprint): unknown[] {
  return [
    r.reported_status,
    r.first_seen_ms,
    r.last_seen_ms,
    r.count,
    r.ips,
    r.ports,
    r.sightings,
    r.oldest_sighting_ms ?? null,
    r.metadata,
    r.updated_ms,
  ]
}

/** Rows per multi-row statement (PostgreSQL: 12 parameters in all, or 12 a row when bound row by row). */
const ROWS_PER_STATEMENT = 1024

/** Rows merged between two turns of the event loop (see `mergePages`). */
const MERGE_SLICE = 32

/**
 * PostgreSQL: merge pages in the caller's transaction with one multi-row statement of each kind:
 * the aggregates of one (instance, fingerprint) are merged together first, then the chunk's
 * stored rows are locked and read in key order (`storeReadFirst`), the fingerprints not found
 * inserted, and the others merged and written back. Rows are locked in key order, so concurrent
 * groups cannot deadlock.
 */
export async function mergePages(
  trx: Transaction<DB>,
  kind: DatabaseKind,
  pages: readonly MergePage[],
  cutoffMs: number,
  now: number,
): Promise<void> {
  // TLS pages' sightings are compared with the stored lists as read before this group's merge,
  // page by page (the group's merged aggregate keeps only 128, which could drop one page's new
  // ones), and recorded after it.
  const tlsPages = pages.filter((p) => p.tls)
  const storedLists = tlsPages.length > 0 ? new Map<string, string>() : undefined
  const byKey = new Map<string, { instanceId: string; aggregate: Aggregate }>()
  for (const { instanceId, incoming } of pages) {
    for (const a of incoming) {
      const key = `${instanceId}\u0000${a.fingerprint}`
      const prev = byKey.get(key)
      byKey.set(key, { instanceId, aggregate: prev ? mergeAggregates(prev.aggregate, a, cutoffMs) : a })
    }
  }
  const keys = [...byKey.keys()].sort()
  for (let i = 0; i < keys.length; i += ROWS_PER_STATEMENT) {
    const chunk = keys.slice(i, i + ROWS_PER_STATEMENT).map((k) => byKey.get(k)!)
    const stored = await storeReadFirst(trx, chunk, now)
    if (storedLists) for (const r of stored) storedLists.set(`${r.instance_id}\u0000${r.fingerprint}`, r.sightings)
    if (stored.length === 0) continue
    const merged: NewFingerprint[] = []
    for (let j = 0; j < stored.length; j++) {
      // Hand the event loop back between slices of the merge, so a policy pull's next step
      // does not wait for the whole group (docs/performance/edgegate.md, round 5).
      if (j > 0 && j % MERGE_SLICE === 0) await new Promise((r) => setImmediate(r))
      const row = stored[j]!
      merged.push(
        mergeIntoRow(
          row.instance_id,
          row,
          byKey.get(`${row.instance_id}\u0000${row.fingerprint}`)!.aggregate,
          cutoffMs,
          now,
        ),
      )
    }
    await trx.executeQuery(pageQuery(merged, true))
  }
  if (!storedLists) return
  const sightings = new Map<string, TlsSightingRows>()
  for (const { instanceId, incoming } of tlsPages) {
    const recorded = rowsOf(sightings, instanceId)
    for (const a of incoming) {
      const stored = storedLists.get(`${instanceId}\u0000${a.fingerprint}`)
      addSightingRows(recorded, instanceId, a, freshSightings(stored, a.sightings))
    }
  }
  for (const [instanceId, { rows }] of sightings) await storeTlsSightings(trx, kind, instanceId, rows)
}

type Entry = { instanceId: string; aggregate: Aggregate }
const entryKey = (e: Entry) => `${e.instanceId}\u0000${e.aggregate.fingerprint}`

/**
 * The chunk's stored rows locked and read first, then only the fingerprints not found
 * inserted. A gate re-reports the fingerprints it already reported far more often than
 * it finds new ones, and inserting first sent every row whole for PostgreSQL to find it stored
 * (its JSON columns encoded, parsed and probed for nothing): the bare statements merge 14–33 %
 * faster this way (docs/performance/edgegate.md). A fingerprint another transaction stores
 * between the read and the insert is not inserted (RETURNING leaves it out): it is locked and
 * read then, and merged like the others.
 */
async function storeReadFirst(trx: Transaction<DB>, chunk: Entry[], now: number): Promise<FingerprintRow[]> {
  const stored = await readStored(trx, chunk)
  if (stored.length === chunk.length) return stored
  const found = new Set(stored.map((r) => `${r.instance_id}\u0000${r.fingerprint}`))
  const missing = chunk.filter((e) => !found.has(entryKey(e)))
  const inserted = await trx.executeQuery<{ instance_id: string; fingerprint: string }>(
    pageQuery(
      missing.map((e) => toRow(e.instanceId, e.aggregate, now)),
      false,
    ),
  )
  if (inserted.rows.length === missing.length) return stored
  const fresh = new Set(inserted.rows.map((r) => `${r.instance_id}\u0000${r.fingerprint}`))
  const raced = await readStored(
    trx,
    missing.filter((e) => !fresh.has(entryKey(e))),
  )
  return [...stored, ...raced]
}

/**
 * The stored rows of `entries` (sorted by key), locked, in the order given (a chunk whose keys
 * hold U+0001 goes by the per-shape statement, which locks in the database's collation order
 * instead: such a group and another could deadlock, and PostgreSQL then fails one, whose pages
 * the queue retries one by one).
 */
async function readStored(trx: Transaction<DB>, entries: Entry[]): Promise<FingerprintRow[]> {
  if (entries.length === 0) return []
  let instances = ''
  let fingerprints = ''
  let joinable = true
  for (const e of entries) {
    const id = e.instanceId
    const fp = e.aggregate.fingerprint
    if (id.includes(TEXT_SEPARATOR) || fp.includes(TEXT_SEPARATOR)) joinable = false
    instances += TEXT_SEPARATOR + id
    fingerprints += TEXT_SEPARATOR + fp
  }
  if (joinable) {
    const { rows } = await trx.executeQuery<FingerprintRow>(CompiledQuery.raw(PG_LOCK, [instances, fingerprints]))
    return rows
  }
  const shape: number[] = []
  const params: string[] = []
  for (let j = 0; j < entries.length; j++) {
    const e = entries[j]!
    if (j === 0 || entries[j - 1]!.instanceId !== e.instanceId) {
      shape.push(0)
      params.push(e.instanceId)
    }
    shape[shape.length - 1]!++
    params.push(e.aggregate.fingerprint)
  }
  const { rows } = await trx.executeQuery<FingerprintRow>(CompiledQuery.raw(lockSql(shape), params))
  return rows
}
