/**
 * The kit's SQLite layer (Kysely over NodeSqliteDatabase, opened with openDatabase) against
 * raw node:sqlite with prepared statements, on the same schema and pragmas.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { CompiledQuery, type Generated, type Kysely } from 'kysely'
import { type Migration, openDatabase, sql } from '../src/index.ts'
import { bestOf, type Figure } from './measure.ts'

interface ItemTable {
  id: Generated<number>
  name: string
  owner: string
  created_at: string
}
interface DB {
  item: ItemTable
}

const DDL = [
  'create table item (id integer primary key, name text not null, owner text not null, created_at text not null)',
  'create unique index item_name on item (name)',
]
const migrations: Record<string, Migration> = {
  '0001_item': {
    async up(db: Kysely<unknown>) {
      for (const stmt of DDL) await db.executeQuery(CompiledQuery.raw(stmt))
    },
  },
}

export interface SqlitePair {
  label: string
  kit: Figure
  raw: Figure
  /** The kit's prepared query (`Database.prepare`): built and compiled once, run with new parameters. */
  prepared?: Figure
}

export async function benchSqlite(n: number, rounds: number): Promise<SqlitePair[]> {
  const dir = mkdtempSync(join(tmpdir(), 'kit-bench-sqlite-'))
  try {
    const raw = new DatabaseSync(join(dir, 'raw.db'))
    raw.exec('PRAGMA journal_mode = WAL')
    raw.exec('PRAGMA synchronous = NORMAL')
    raw.exec('PRAGMA foreign_keys = ON')
    for (const stmt of DDL) raw.exec(stmt)
    const kit = await openDatabase<DB>({ url: `sqlite:${join(dir, 'kit.db')}`, migrations })
    const { db } = kit

    const rawInsert = raw.prepare('insert into item (name, owner, created_at) values (?, ?, ?)')
    const rawGet = raw.prepare('select id, name, owner, created_at from item where name = ?')
    const rawClear = raw.prepare('delete from item')
    const now = new Date().toISOString()
    let seq = 0
    const clearKit = () => db.deleteFrom('item').execute()
    // Untimed before each round: empty the table and checkpoint the WAL, so neither the
    // delete nor an automatic checkpoint (which lands on whichever commit crosses 1000
    // pages) is charged to the variant that happens to run then.
    const resetRaw = () => {
      rawClear.run()
      raw.exec('PRAGMA wal_checkpoint(TRUNCATE)')
    }
    const resetKit = async () => {
      await clearKit()
      await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db)
    }

    const rawTx = () => {
      raw.exec('BEGIN')
      for (let i = 0; i < n; i++) rawInsert.run(`item-${seq++}`, 'owner', now)
      raw.exec('COMMIT')
    }
    const kitTx = async () => {
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < n; i++) {
          await trx
            .insertInto('item')
            .values({ name: `item-${seq++}`, owner: 'owner', created_at: now })
            .execute()
        }
      })
    }
    const insert = kit.prepare(db.insertInto('item').values({ name: '', owner: '', created_at: '' }))
    const kitTxPrepared = async () => {
      await db.transaction().execute(async (trx) => {
        const txInsert = insert.in(trx)
        for (let i = 0; i < n; i++) await txInsert.run(`item-${seq++}`, 'owner', now)
      })
    }
    const auto = Math.max(1000, Math.floor(n / 4))
    const rawAuto = () => {
      for (let i = 0; i < auto; i++) rawInsert.run(`item-${seq++}`, 'owner', now)
    }
    const kitAuto = async () => {
      for (let i = 0; i < auto; i++) {
        await db
          .insertInto('item')
          .values({ name: `item-${seq++}`, owner: 'owner', created_at: now })
          .execute()
      }
    }

    const transactionSync = kit.transactionSync!
    const kitTxSync = async () => {
      await transactionSync((tx) => {
        for (let i = 0; i < n; i++) tx.run(insert, `item-${seq++}`, 'owner', now)
      })
    }
    const kitAutoPrepared = async () => {
      for (let i = 0; i < auto; i++) await insert.run(`item-${seq++}`, 'owner', now)
    }

    const results: SqlitePair[] = []
    {
      const [raw, kit, sync, prepared] = await bestOf(rounds, [
        { name: 'raw', ops: n, fn: rawTx, setup: resetRaw },
        { name: 'kit', ops: n, fn: kitTx, setup: resetKit },
        { name: 'kit transactionSync', ops: n, fn: kitTxSync, setup: resetKit },
        { name: 'kit prepared', ops: n, fn: kitTxPrepared, setup: resetKit },
      ])
      results.push({ label: `insert, one transaction (${n} rows)`, raw: raw!, kit: kit!, prepared: prepared! })
      results.push({ label: '  same, prepared in transactionSync', raw: raw!, kit: sync! })
    }
    {
      const [raw, kit, prepared] = await bestOf(rounds, [
        { name: 'raw', ops: auto, fn: rawAuto, setup: resetRaw },
        { name: 'kit', ops: auto, fn: kitAuto, setup: resetKit },
        { name: 'kit prepared', ops: auto, fn: kitAutoPrepared, setup: resetKit },
      ])
      results.push({ label: `insert, autocommit (${auto} rows)`, raw: raw!, kit: kit!, prepared: prepared! })
    }

    // Point reads by an indexed column over the same n rows in both databases.
    rawClear.run()
    await clearKit()
    raw.exec('BEGIN')
    for (let i = 0; i < n; i++) rawInsert.run(`row-${i}`, 'owner', now)
    raw.exec('COMMIT')
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < n; i++)
        await trx
          .insertInto('item')
          .values({ name: `row-${i}`, owner: 'owner', created_at: now })
          .execute()
    })
    const reads = n * 2
    let sink = 0
    const rawRead = () => {
      for (let i = 0; i < reads; i++) sink += (rawGet.get(`row-${(i * 7919) % n}`) as { id: number }).id
    }
    const kitRead = async () => {
      for (let i = 0; i < reads; i++) {
        const row = await db
          .selectFrom('item')
          .select(['id', 'name', 'owner', 'created_at'])
          .where('name', '=', `row-${(i * 7919) % n}`)
          .executeTakeFirstOrThrow()
        sink += row.id
      }
    }
    const byName = kit.prepare(
      db.selectFrom('item').select(['id', 'name', 'owner', 'created_at']).where('name', '=', ''),
    )
    const kitReadPrepared = async () => {
      for (let i = 0; i < reads; i++) sink += (await byName.first(`row-${(i * 7919) % n}`))!.id
    }
    {
      const [raw, kit, prepared] = await bestOf(rounds, [
        { name: 'raw', ops: reads, fn: rawRead },
        { name: 'kit', ops: reads, fn: kitRead },
        { name: 'kit prepared', ops: reads, fn: kitReadPrepared },
      ])
      results.push({ label: `indexed point read (${reads} reads)`, raw: raw!, kit: kit!, prepared: prepared! })
    }
    if (sink < 0) console.log(sink)
    raw.close()
    await kit.close()
    return results
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
