/**
 * The kit's SQLite layer (Kysely over NodeSqliteDatabase, opened with openDatabase) against
 * raw node:sqlite with prepared statements, on the same schema and pragmas.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { CompiledQuery, type Generated, type Kysely } from 'kysely'
import { type Migration, openDatabase } from '../src/index.ts'
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
  /** Kit running queries compiled once (no query building), to separate Kysely's builder from the adapter. */
  precompiled?: Figure
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

    const rawTx = () => {
      rawClear.run()
      raw.exec('BEGIN')
      for (let i = 0; i < n; i++) rawInsert.run(`item-${seq++}`, 'owner', now)
      raw.exec('COMMIT')
    }
    const kitTx = async () => {
      await clearKit()
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < n; i++) {
          await trx
            .insertInto('item')
            .values({ name: `item-${seq++}`, owner: 'owner', created_at: now })
            .execute()
        }
      })
    }
    const insertSql = db.insertInto('item').values({ name: '', owner: '', created_at: '' }).compile()
    const kitTxPre = async () => {
      await clearKit()
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < n; i++) {
          await trx.executeQuery(CompiledQuery.raw(insertSql.sql, [`item-${seq++}`, 'owner', now]))
        }
      })
    }
    const auto = Math.max(1000, Math.floor(n / 4))
    const rawAuto = () => {
      rawClear.run()
      for (let i = 0; i < auto; i++) rawInsert.run(`item-${seq++}`, 'owner', now)
    }
    const kitAuto = async () => {
      await clearKit()
      for (let i = 0; i < auto; i++) {
        await db
          .insertInto('item')
          .values({ name: `item-${seq++}`, owner: 'owner', created_at: now })
          .execute()
      }
    }

    const results: SqlitePair[] = []
    {
      const [raw, kit, precompiled] = await bestOf(rounds, [
        { name: 'raw', ops: n, fn: rawTx },
        { name: 'kit', ops: n, fn: kitTx },
        { name: 'kit precompiled', ops: n, fn: kitTxPre },
      ])
      results.push({ label: `insert, one transaction (${n} rows)`, raw: raw!, kit: kit!, precompiled: precompiled! })
    }
    {
      const [raw, kit] = await bestOf(rounds, [
        { name: 'raw', ops: auto, fn: rawAuto },
        { name: 'kit', ops: auto, fn: kitAuto },
      ])
      results.push({ label: `insert, autocommit (${auto} rows)`, raw: raw!, kit: kit! })
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
    const readSql = db.selectFrom('item').select(['id', 'name', 'owner', 'created_at']).where('name', '=', '').compile()
    const kitReadPre = async () => {
      for (let i = 0; i < reads; i++) {
        const r = await db.executeQuery<{ id: number }>(CompiledQuery.raw(readSql.sql, [`row-${(i * 7919) % n}`]))
        sink += r.rows[0]!.id
      }
    }
    {
      const [raw, kit, precompiled] = await bestOf(rounds, [
        { name: 'raw', ops: reads, fn: rawRead },
        { name: 'kit', ops: reads, fn: kitRead },
        { name: 'kit precompiled', ops: reads, fn: kitReadPre },
      ])
      results.push({ label: `indexed point read (${reads} reads)`, raw: raw!, kit: kit!, precompiled: precompiled! })
    }
    if (sink < 0) console.log(sink)
    raw.close()
    await kit.close()
    return results
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
