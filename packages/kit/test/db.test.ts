import assert from 'node:assert/strict'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { mountFailingDisk, mountSmallDisk, type Postgres, startPostgres, waitFor } from '@gatehouse/testkit'
import { CompiledQuery, type Kysely } from 'kysely'
import { queryTimeoutOption } from '../src/db/pg-pool.ts'
import { unavailableAdvice } from '../src/db/unavailable.ts'
import {
  createHttpApp,
  createLogger,
  type Database,
  isDatabaseUnavailable,
  isUniqueViolation,
  type Migration,
  NodeSqliteDatabase,
  openDatabase,
  parseDatabaseUrl,
  StartupError,
  serverPrepared,
  sql,
} from '../src/index.ts'
import { startRelay } from './fixtures/pg-relay.ts'

const execFileP = promisify(execFile)

interface OwnerTable {
  id: string
  name: string
}
interface ItemTable {
  id: string
  owner_id: string
  name: string
  active: boolean | number
  created_at: string | Date
  size: number
}
interface DB {
  owner: OwnerTable
  item: ItemTable
}

/** Migrations that count how often each one runs. */
function makeMigrations() {
  const runs = { init: 0, items: 0 }
  const migrations: Record<string, Migration> = {
    '0001_init': {
      async up(db: Kysely<unknown>) {
        runs.init++
        await db.schema
          .createTable('owner')
          .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('name', 'varchar(200)', (c) => c.notNull())
          .execute()
      },
    },
    '0002_items': {
      async up(db: Kysely<unknown>) {
        runs.items++
        await db.schema
          .createTable('item')
          .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('owner_id', 'varchar(64)', (c) => c.notNull().references('owner.id').onDelete('cascade'))
          .addColumn('name', 'varchar(200)', (c) => c.notNull().unique())
          .addColumn('active', 'boolean', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('size', 'bigint', (c) => c.notNull().defaultTo(0))
          .execute()
        await db.schema.createIndex('item_owner').on('item').column('owner_id').execute()
      },
    },
  }
  return { migrations, runs }
}

const dir = mkdtempSync(join(tmpdir(), 'kit-db-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let fileCounter = 0

interface Backend {
  kind: 'sqlite' | 'postgres'
  /** A URL of a fresh, empty database. */
  fresh(): Promise<string>
}

let pgServer: Postgres | undefined
const backends: Backend[] = [
  { kind: 'sqlite', fresh: async () => `sqlite:${join(dir, `t${fileCounter++}.db`)}` },
  {
    kind: 'postgres',
    fresh: async () => {
      pgServer ??= await startPostgres()
      return pgServer.createDatabase()
    },
  },
]
after(async () => {
  await pgServer?.stop()
})

async function withDb(url: string, fn: (d: Database<DB>) => Promise<void>) {
  const d = await openDatabase<DB>({ url, migrations: makeMigrations().migrations })
  try {
    await fn(d)
  } finally {
    await d.close()
  }
}

const now = () => new Date().toISOString()

const childScript = join(dir, 'migrate-child.ts')
writeFileSync(
  childScript,
  `import { openDatabase, sql } from ${JSON.stringify(resolve(import.meta.dirname, '../src/index.ts'))}
const ran = []
// Enough work inside each migration that two starters overlap.
const fill = async (db, table) => {
  await db.schema.createTable(table).addColumn('id', 'integer').execute()
  for (let i = 0; i < 3000; i++) await sql\`insert into \${sql.table(table)} values (\${i})\`.execute(db)
}
const migrations = {
  '0001_a': { async up(db) { ran.push('0001'); await fill(db, 'a') } },
  '0002_b': { async up(db) { ran.push('0002'); await fill(db, 'b') } },
}
const d = await openDatabase({ url: process.argv[2], migrations })
const n = await sql\`select count(*) as n from b\`.execute(d.db)
if (n.rows[0].n !== 3000) throw new Error('table b has ' + n.rows[0].n + ' rows')
await d.close()
process.stdout.write(JSON.stringify(ran))
`,
)

async function migrateInChild(url: string): Promise<{ code: number | null; ran: string[]; stderr: string }> {
  const child = spawn(process.execPath, [childScript, url], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString()
  })
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString()
  })
  const [code] = (await once(child, 'close')) as [number | null]
  return { code, ran: code === 0 ? (JSON.parse(stdout) as string[]) : [], stderr }
}

for (const backend of backends) {
  describe(`database (${backend.kind})`, () => {
    let url: string
    before(async () => {
      url = await backend.fresh()
    })

    test('migrations are applied once', async () => {
      const url = await backend.fresh()
      const first = makeMigrations()
      const a = await openDatabase<DB>({ url, migrations: first.migrations })
      assert.equal(a.kind, backend.kind)
      assert.deepEqual(first.runs, { init: 1, items: 1 })
      await a.close()
      const second = makeMigrations()
      const b = await openDatabase<DB>({ url, migrations: second.migrations })
      assert.deepEqual(second.runs, { init: 0, items: 0 }, 'the second open applies nothing')
      const applied = await sql<{ name: string }>`select name from schema_migration order by name`.execute(b.db)
      assert.deepEqual(
        applied.rows.map((r) => r.name),
        ['0001_init', '0002_items'],
      )
      await b.close()
    })

    // An up-to-date database skips Kysely's Migrator (one read of schema_migration); every other
    // state still goes through it: a pending migration is applied, an unknown one refused.
    test('a pending migration is applied and an unknown one refused past the up-to-date check', async () => {
      const url = await backend.fresh()
      const all = makeMigrations()
      const older = { '0001_init': all.migrations['0001_init']! }
      const a = await openDatabase<DB>({ url, migrations: older })
      await a.close()
      const b = await openDatabase<DB>({ url, migrations: all.migrations })
      assert.deepEqual(all.runs, { init: 1, items: 1 }, 'the pending migration ran once')
      await b.close()
      // A release rolled back: the older code meets a database its successor migrated. The
      // refusal says so in one line, without the password, and writes nothing.
      await assert.rejects(openDatabase<DB>({ url, migrations: older }), (err: unknown) => {
        assert.ok(err instanceof StartupError)
        assert.equal(err.lines.length, 1)
        assert.match(
          err.lines[0]!,
          /^database .+ was migrated by a newer version \(0002_items, which this version does not know\); run that version or a later one, or restore a backup taken before the upgrade$/,
        )
        assert.doesNotMatch(err.lines[0]!, /corrupted|:[^:@/]+@/)
        return true
      })
      await assert.rejects(openDatabase<DB>({ url, migrations: older, readsOnly: true }), /was migrated by a newer/)
      const c = await openDatabase<DB>({ url, migrations: all.migrations })
      const applied = await sql<{ name: string }>`select name from schema_migration order by name`.execute(c.db)
      assert.deepEqual(
        applied.rows.map((r) => r.name),
        ['0001_init', '0002_items'],
        'the refused starts changed nothing',
      )
      await c.close()
    })

    test('concurrent openDatabase calls on the same database both succeed', async () => {
      const url = await backend.fresh()
      if (backend.kind === 'sqlite') {
        // node:sqlite is synchronous: a second connection in the same thread would block the
        // event loop while it waits for the lock, so race two processes instead.
        const [a, b] = await Promise.all([migrateInChild(url), migrateInChild(url)])
        assert.equal(a.code, 0, a.stderr)
        assert.equal(b.code, 0, b.stderr)
        assert.deepEqual([...a.ran, ...b.ran].sort(), ['0001', '0002'], 'each migration ran exactly once')
        return
      }
      const m1 = makeMigrations()
      const m2 = makeMigrations()
      const [a, b] = await Promise.all([
        openDatabase<DB>({ url, migrations: m1.migrations }),
        openDatabase<DB>({ url, migrations: m2.migrations }),
      ])
      assert.equal(m1.runs.init + m2.runs.init, 1, 'each migration ran exactly once')
      assert.equal(m1.runs.items + m2.runs.items, 1)
      await Promise.all([a.close(), b.close()])
    })

    test('a failing migration is a StartupError naming it, and its batch is rolled back', async () => {
      const url = await backend.fresh()
      const migrations: Record<string, Migration> = {
        ...makeMigrations().migrations,
        '0003_broken': {
          async up(db) {
            await db.schema.createTable('half').addColumn('id', 'integer').execute()
            await sql`this is not sql`.execute(db)
          },
        },
      }
      await assert.rejects(openDatabase({ url, migrations }), (err: unknown) => {
        assert.ok(err instanceof StartupError)
        assert.equal(err.lines.length, 1)
        assert.match(err.lines[0]!, /^database migration 0003_broken failed: /)
        return true
      })
      const d = await openDatabase<DB>({ url })
      const tables = (await d.db.introspection.getTables()).map((t) => t.name)
      assert.ok(!tables.includes('half'), 'nothing of the failed migration is kept')
      assert.ok(!tables.includes('owner'), 'the whole batch is one transaction')
      const applied = await sql<{ name: string }>`select name from schema_migration`.execute(d.db)
      assert.deepEqual(applied.rows, [])
      await d.close()
      // A fixed set of migrations then applies cleanly.
      const fixed = makeMigrations()
      await (await openDatabase<DB>({ url, migrations: fixed.migrations })).close()
      assert.deepEqual(fixed.runs, { init: 1, items: 1 })
    })

    test('CRUD through Kysely', async () => {
      await withDb(url, async ({ db }) => {
        await db.insertInto('owner').values({ id: 'o1', name: 'Ann' }).execute()
        await db
          .insertInto('item')
          .values([
            { id: 'i1', owner_id: 'o1', name: 'one', active: true, created_at: now(), size: 10 },
            { id: 'i2', owner_id: 'o1', name: 'two', active: false, created_at: now(), size: 2 ** 40 },
          ])
          .execute()
        const rows = await db
          .selectFrom('item')
          .select(['id', 'name', 'size'])
          .where('owner_id', '=', 'o1')
          .orderBy('id')
          .execute()
        assert.deepEqual(rows, [
          { id: 'i1', name: 'one', size: 10 },
          { id: 'i2', name: 'two', size: 2 ** 40 },
        ])
        const updated = await db.updateTable('item').set({ name: 'uno' }).where('id', '=', 'i1').executeTakeFirst()
        assert.equal(updated.numUpdatedRows, 1n)
        const one = await db.selectFrom('item').select('name').where('id', '=', 'i1').executeTakeFirstOrThrow()
        assert.equal(one.name, 'uno')
        const count = await db
          .selectFrom('item')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
        assert.equal(count.n, 2, 'counts are numbers on both backends')
        const deleted = await db.deleteFrom('item').where('id', '=', 'i2').executeTakeFirst()
        assert.equal(deleted.numDeletedRows, 1n)
        const returned = await db
          .insertInto('item')
          .values({ id: 'i3', owner_id: 'o1', name: 'three', active: true, created_at: now(), size: 3 })
          .returning(['id', 'size'])
          .executeTakeFirstOrThrow()
        assert.deepEqual(returned, { id: 'i3', size: 3 })
        await db.deleteFrom('owner').where('id', '=', 'o1').execute()
        const left = await db.selectFrom('item').selectAll().execute()
        assert.deepEqual(left, [], 'ON DELETE CASCADE works (foreign keys are enforced)')
      })
    })

    test('foreign keys are enforced', async () => {
      await withDb(url, async ({ db }) => {
        await assert.rejects(
          db
            .insertInto('item')
            .values({ id: 'fk', owner_id: 'nobody', name: 'fk', active: true, created_at: now(), size: 0 })
            .execute(),
          (err: unknown) => {
            assert.equal(isUniqueViolation(err), false)
            return true
          },
        )
      })
    })

    test('a transaction rolls back when its callback throws', async () => {
      await withDb(url, async ({ db }) => {
        await assert.rejects(
          db.transaction().execute(async (trx) => {
            await trx.insertInto('owner').values({ id: 'tx1', name: 'inside' }).execute()
            const seen = await trx.selectFrom('owner').select('id').where('id', '=', 'tx1').execute()
            assert.equal(seen.length, 1, 'visible inside the transaction')
            throw new Error('abort')
          }),
          /abort/,
        )
        const after = await db.selectFrom('owner').select('id').where('id', '=', 'tx1').execute()
        assert.deepEqual(after, [])
        await db.transaction().execute(async (trx) => {
          await trx.insertInto('owner').values({ id: 'tx2', name: 'kept' }).execute()
        })
        assert.equal(
          (await db.selectFrom('owner').select('name').where('id', '=', 'tx2').executeTakeFirst())?.name,
          'kept',
        )
      })
    })

    test('isUniqueViolation recognises duplicate keys', async () => {
      await withDb(url, async ({ db }) => {
        await db.insertInto('owner').values({ id: 'u1', name: 'x' }).execute()
        const dupPk = await db
          .insertInto('owner')
          .values({ id: 'u1', name: 'y' })
          .execute()
          .then(
            () => undefined,
            (e: unknown) => e,
          )
        assert.ok(dupPk, 'duplicate primary key fails')
        assert.equal(isUniqueViolation(dupPk), true)
        await db
          .insertInto('item')
          .values({ id: 'u-i1', owner_id: 'u1', name: 'same', active: true, created_at: now(), size: 0 })
          .execute()
        const dupName = await db
          .insertInto('item')
          .values({ id: 'u-i2', owner_id: 'u1', name: 'same', active: true, created_at: now(), size: 0 })
          .execute()
          .then(
            () => undefined,
            (e: unknown) => e,
          )
        assert.equal(isUniqueViolation(dupName), true)
        assert.equal(isUniqueViolation(new Error('boom')), false)
        assert.equal(isUniqueViolation(undefined), false)
      })
    })

    test('ping; a raw connection and synchronous transactions only on SQLite', async () => {
      await withDb(url, async (d) => {
        await d.ping()
        assert.equal(d.sqlite !== undefined, backend.kind === 'sqlite')
        assert.equal(d.transactionSync !== undefined, backend.kind === 'sqlite')
      })
    })

    test('prepared queries: rows, writes and transactions like the query builder', async () => {
      await withDb(url, async (d) => {
        const { db } = d
        await db.insertInto('owner').values({ id: 'p-owner', name: 'P' }).execute()
        const insert = d.prepare(
          db
            .insertInto('item')
            .values({ id: '', owner_id: 'p-owner', name: '', active: true, created_at: now(), size: 0 }),
        )
        const byName = d.prepare(db.selectFrom('item').select(['id', 'name', 'size']).where('name', '=', ''))
        const ofOwner = d.prepare(
          db.selectFrom('item').select(['id']).where('owner_id', '=', '').where('size', '>=', 0).orderBy('id'),
        )
        const grow = d.prepare(db.updateTable('item').set({ size: 0 }).where('owner_id', '=', ''))

        // Parameters come in the order the compiled query uses them.
        assert.equal(await insert.run('p1', 'p-owner', 'first', true, now(), 7), 1)
        assert.deepEqual(await byName.first('first'), { id: 'p1', name: 'first', size: 7 })
        assert.equal(await byName.first('missing'), undefined)

        // Inside a transaction: visible there, gone with a rollback, kept with a commit.
        await assert.rejects(
          db.transaction().execute(async (trx) => {
            const txInsert = insert.in(trx)
            for (let i = 0; i < 3; i++) await txInsert.run(`t${i}`, 'p-owner', `tx-${i}`, false, now(), i)
            assert.equal((await ofOwner.in(trx).all('p-owner', 0)).length, 4)
            throw new Error('abort')
          }),
          /abort/,
        )
        assert.deepEqual(await ofOwner.all('p-owner', 0), [{ id: 'p1' }])
        await db.transaction().execute(async (trx) => {
          await insert.in(trx).run('p2', 'p-owner', 'second', true, now(), 1)
        })
        assert.deepEqual(await ofOwner.all('p-owner', 1), [{ id: 'p1' }, { id: 'p2' }])
        assert.equal(await grow.run(100, 'p-owner'), 2)
        assert.deepEqual(await byName.first('second'), { id: 'p2', name: 'second', size: 100 })

        // Errors reject (never throw synchronously) and leave the connection usable.
        const duplicate = insert.run('p1', 'p-owner', 'first', true, now(), 0)
        assert.ok(duplicate instanceof Promise)
        await assert.rejects(duplicate, (err: unknown) => isUniqueViolation(err))
        await assert.rejects(byName.first(), /prepared query takes 1 parameters, got 0/)
        assert.throws(() => insert.in(db), /takes a transaction/)
        assert.deepEqual(await byName.first('first'), { id: 'p1', name: 'first', size: 100 })
      })
    })

    test('a prepared query outside a transaction waits for it: it never reads or writes inside it', async () => {
      await withDb(url, async (d) => {
        const { db } = d
        const byId = d.prepare(db.selectFrom('owner').select(['name']).where('id', '=', ''))
        const rename = d.prepare(db.updateTable('owner').set({ name: '' }).where('id', '=', ''))
        await db.insertInto('owner').values({ id: 'w1', name: 'before' }).execute()
        let release!: () => void
        const gate = new Promise<void>((r) => {
          release = r
        })
        let inside!: () => void
        const started = new Promise<void>((r) => {
          inside = r
        })
        const tx = db.transaction().execute(async (trx) => {
          await trx.updateTable('owner').set({ name: 'uncommitted' }).where('id', '=', 'w1').execute()
          inside()
          await gate
          throw new Error('roll back')
        })
        await started
        const read = byId.first('w1')
        const write = rename.run('after', 'w1')
        // PostgreSQL: the read runs on a connection of its own and sees the committed row while
        // the transaction is open. Awaited here, before the rollback: a read still waiting for
        // its connection when the rename commits would see 'after', rightly (a slow host did).
        if (backend.kind === 'postgres') assert.deepEqual(await read, { name: 'before' })
        // Give both every chance to run early; on SQLite they must not.
        await new Promise((r) => setTimeout(r, 50))
        release()
        await assert.rejects(tx, /roll back/)
        // On SQLite they waited for the connection; on PostgreSQL they ran on another
        // connection and saw only committed data. Either way: no uncommitted read, no lost write.
        assert.deepEqual(await read, { name: 'before' })
        assert.equal(await write, 1)
        assert.deepEqual(await byId.first('w1'), { name: 'after' })
      })
    })

    test('many distinct statements (beyond the statement cache) all work', async () => {
      await withDb(url, async ({ db }) => {
        for (let round = 0; round < 2; round++) {
          for (let i = 0; i < 300; i++) {
            const r = await sql<{ n: number }>`select ${sql.raw(String(i))} + 0 as n`.execute(db)
            assert.equal(Number(r.rows[0]?.n), i)
          }
        }
      })
    })
  })
}

describe('SQLite specifics', () => {
  test('transactionSync: one synchronous transaction, committed or rolled back whole', async () => {
    await withDb(await backends[0]!.fresh(), async (d) => {
      const { db } = d
      assert.ok(d.transactionSync)
      await db.insertInto('owner').values({ id: 's-owner', name: 'S' }).execute()
      const insert = d.prepare(
        db.insertInto('item').values({ id: '', owner_id: '', name: '', active: true, created_at: now(), size: 0 }),
      )
      const count = d.prepare(
        db
          .selectFrom('item')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('size', '>=', 0),
      )
      const ids = await d.transactionSync((tx) => {
        for (let i = 0; i < 100; i++) tx.run(insert, `s${i}`, 's-owner', `sync-${i}`, i % 2 === 0, now(), i)
        return tx.all(d.prepare(db.selectFrom('item').select('id').where('size', '<', 0).orderBy('id')), 2)
      })
      assert.deepEqual(ids, [{ id: 's0' }, { id: 's1' }])
      assert.deepEqual(await count.first(0), { n: 100 })

      // A throw (here a duplicate key half-way) rolls back everything the callback did.
      await assert.rejects(
        d.transactionSync((tx) => {
          tx.run(insert, 'new-1', 's-owner', 'new-1', true, now(), 1)
          tx.run(insert, 's5', 's-owner', 'dup', true, now(), 1)
        }),
        (err: unknown) => isUniqueViolation(err),
      )
      assert.deepEqual(await count.first(0), { n: 100 })

      // It waits for a Kysely transaction holding the connection, and vice versa.
      let release!: () => void
      const gate = new Promise<void>((r) => {
        release = r
      })
      const order: string[] = []
      const kysely = db.transaction().execute(async (trx) => {
        order.push('kysely begins')
        await gate
        await trx.insertInto('owner').values({ id: 'k', name: 'K' }).execute()
        order.push('kysely ends')
      })
      await new Promise((r) => setTimeout(r, 10))
      const sync = d.transactionSync((tx) => {
        order.push('sync runs')
        return tx.first(d.prepare(db.selectFrom('owner').select('name').where('id', '=', '')), 'k')
      })
      await new Promise((r) => setTimeout(r, 10))
      release()
      await kysely
      assert.deepEqual(await sync, { name: 'K' }, 'the sync transaction ran after the commit')
      assert.deepEqual(order, ['kysely begins', 'kysely ends', 'sync runs'])

      // Misuse is a clear error and leaves no transaction open.
      await assert.rejects(
        d.transactionSync(async () => {}),
        /returned a promise; it must be synchronous/,
      )
      let kept!: Parameters<Parameters<NonNullable<typeof d.transactionSync>>[0]>[0]
      await d.transactionSync((tx) => {
        kept = tx
      })
      assert.throws(() => kept.run(insert, 'late', 's-owner', 'late', true, now(), 0), /the transaction has ended/)
      await assert.rejects(
        d.transactionSync((tx) => tx.run(insert, 'few')),
        /takes 6 parameters, got 1/,
      )
      assert.equal(d.sqlite!.isTransaction, false)
      assert.deepEqual(await count.first(0), { n: 100 })
    })
  })

  test('booleans and Dates are bound as 1/0 and RFC 3339 text', async () => {
    const url = `sqlite:${join(dir, `t${fileCounter++}.db`)}`
    await withDb(url, async ({ db }) => {
      const when = new Date('2026-11-22T05:19:26.123Z')
      await db.insertInto('owner').values({ id: 'o', name: 'n' }).execute()
      await db
        .insertInto('item')
        .values([
          { id: 'a', owner_id: 'o', name: 'a', active: true, created_at: when, size: 1 },
          { id: 'b', owner_id: 'o', name: 'b', active: false, created_at: when, size: 1 },
        ])
        .execute()
      const rows = await db.selectFrom('item').select(['id', 'active', 'created_at']).orderBy('id').execute()
      assert.deepEqual(rows, [
        { id: 'a', active: 1, created_at: '2026-11-22T05:19:26.123Z' },
        { id: 'b', active: 0, created_at: '2026-11-22T05:19:26.123Z' },
      ])
      const byFlag = await db.selectFrom('item').select('id').where('active', '=', true).execute()
      assert.deepEqual(byFlag, [{ id: 'a' }])
      const byDate = await db.selectFrom('item').select('id').where('created_at', '<=', when).orderBy('id').execute()
      assert.equal(byDate.length, 2)
      // undefined parameters are bound as NULL rather than failing.
      const r = await sql<{ v: null }>`select ${undefined} as v`.execute(db)
      assert.deepEqual(r.rows, [{ v: null }])
    })
  })

  test('WAL, foreign_keys and busy timeout pragmas', async () => {
    const url = `sqlite:${join(dir, `t${fileCounter++}.db`)}`
    await withDb(url, async ({ db }) => {
      const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db)
      assert.equal(mode.rows[0]?.journal_mode, 'wal')
      const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)
      assert.equal(fk.rows[0]?.foreign_keys, 1)
      // SQLite itself waits 10 ms at a time; the rest of the 5 s is waited between attempts.
      const busy = await sql<{ timeout: number }>`pragma busy_timeout`.execute(db)
      assert.equal(busy.rows[0]?.timeout, 10)
    })
    const raw = new NodeSqliteDatabase(join(dir, 'raw.db'), { busyTimeoutMs: 250 })
    assert.equal(raw.busyTimeoutMs, 250)
    assert.equal(raw.raw.prepare('pragma busy_timeout').get()?.timeout, 10)
    raw.close()
    raw.close()
    const short = new NodeSqliteDatabase(join(dir, 'raw.db'), { busyTimeoutMs: 4 })
    assert.equal(short.raw.prepare('pragma busy_timeout').get()?.timeout, 4)
    short.close()
  })

  test('the raw SQLite connection is the one Kysely runs on', async () => {
    const url = `sqlite:${join(dir, `t${fileCounter++}.db`)}`
    await withDb(url, async ({ db, sqlite }) => {
      assert.ok(sqlite)
      sqlite.prepare("insert into owner (id, name) values ('raw', 'from raw')").run()
      const row = await db.selectFrom('owner').select('name').where('id', '=', 'raw').executeTakeFirst()
      assert.equal(row?.name, 'from raw')
      // Inside a Kysely transaction the raw handle sees its uncommitted writes: same connection.
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('owner').values({ id: 'tx', name: 'in tx' }).execute()
        assert.equal(sqlite.prepare("select count(*) as n from owner where id = 'tx'").get()?.n, 1)
      })
    })
  })

  test('sqlite::memory: and sqlite:/// URLs', async () => {
    const mem = await openDatabase<DB>({ url: 'sqlite::memory:', migrations: makeMigrations().migrations })
    await mem.db.insertInto('owner').values({ id: 'm', name: 'mem' }).execute()
    await mem.close()
    assert.deepEqual(parseDatabaseUrl('sqlite:///var/lib/x.db'), { kind: 'sqlite', location: '/var/lib/x.db' })
    assert.deepEqual(parseDatabaseUrl('sqlite:data/x.db'), { kind: 'sqlite', location: 'data/x.db' })
    const nested = join(dir, 'a', 'b', 'c.db')
    const created = await openDatabase<DB>({ url: `sqlite:${nested}` })
    await created.close()
  })

  test('a write kept waiting past the busy timeout, one the disk has no room for, or one the file cannot take is an unavailable database; a constraint is not', async () => {
    const file = join(dir, 'busy.db')
    const thrown = (fn: () => void): unknown => {
      try {
        fn()
      } catch (err) {
        return err
      }
      throw new Error('expected an error')
    }
    const holder = new NodeSqliteDatabase(file)
    const waiter = new NodeSqliteDatabase(file, { busyTimeoutMs: 50 })
    try {
      holder.raw.exec('create table t (id integer primary key)')
      holder.raw.exec('begin immediate')
      const busy = thrown(() => waiter.raw.exec('insert into t values (1)'))
      assert.match(String((busy as Error).message), /locked/)
      assert.equal(isDatabaseUnavailable(busy), true)
      // A command's error line says what helps: waiting, for a lock.
      assert.equal(unavailableAdvice(busy), 'another process holds it: try again in a moment')
      holder.raw.exec('commit')
      waiter.raw.exec('insert into t values (1)')
      const duplicate = thrown(() => waiter.raw.exec('insert into t values (1)'))
      assert.equal(isUniqueViolation(duplicate), true)
      assert.equal(isDatabaseUnavailable(duplicate), false)
      // A full disk (here: the file may not grow) is unavailable too, until someone frees space.
      waiter.raw.exec('create table blobs (b blob)')
      const pages = Number(waiter.raw.prepare('pragma page_count').get()!.page_count)
      waiter.raw.exec(`pragma max_page_count = ${pages}`)
      const full = thrown(() => waiter.raw.exec('insert into blobs values (randomblob(100000))'))
      assert.match(String((full as Error).message), /full/)
      assert.equal(isDatabaseUnavailable(full), true)
      assert.equal(unavailableAdvice(full), 'free space on its disk, then run this again')
    } finally {
      holder.close()
      waiter.close()
    }
    // A file that cannot be written (here opened read-only; a file system remounted read-only
    // after a disk error says the same, or "disk I/O error": apps' database-outage tests).
    const reader = new DatabaseSync(file, { readOnly: true })
    try {
      const readOnly = thrown(() => reader.exec('insert into t values (2)'))
      assert.match(String((readOnly as Error).message), /readonly/)
      assert.equal(isDatabaseUnavailable(readOnly), true)
      assert.match(unavailableAdvice(readOnly), /^its file cannot be written .*; commands that only read still work$/)
      assert.equal(reader.prepare('select count(*) as n from t').get()?.n, 1)
    } finally {
      reader.close()
    }
  })

  test("a statement waiting for another connection's lock leaves the event loop free, then fails or goes through", async () => {
    const file = join(dir, `t${fileCounter++}.db`)
    const d = await openDatabase<DB>({
      url: `sqlite:${file}`,
      migrations: makeMigrations().migrations,
      busyTimeoutMs: 1000,
    })
    const holder = new DatabaseSync(file)
    try {
      const byId = d.prepare(d.db.selectFrom('owner').select('name').where('id', '=', ''))
      const insert = d.prepare(d.db.insertInto('owner').values({ id: '', name: '' }))
      await d.db.insertInto('owner').values({ id: 'r', name: 'readable' }).execute()
      // Every kit path that writes: a Kysely statement, a Kysely transaction, a prepared
      // statement, a synchronous transaction.
      const writes = (suffix: string) => [
        d.db
          .insertInto('owner')
          .values({ id: `k${suffix}`, name: 'kysely' })
          .execute(),
        d.db.transaction().execute((trx) =>
          trx
            .insertInto('owner')
            .values({ id: `t${suffix}`, name: 'trx' })
            .execute(),
        ),
        insert.run(`p${suffix}`, 'prepared'),
        d.transactionSync!((tx) => tx.run(insert, `s${suffix}`, 'sync')),
      ]

      holder.exec('begin immediate')
      const order: string[] = []
      const failed = writes('1').map((write) =>
        write.then(
          () => order.push('stored'),
          (err: unknown) => {
            order.push('failed')
            return err
          },
        ),
      )
      // A timer and a read run while the writes wait: the thread is not asleep inside SQLite.
      const read = new Promise((resolve) => setTimeout(resolve, 50))
        .then(() => byId.first('r'))
        .then((row) => {
          order.push('read')
          return row
        })
      assert.deepEqual(await read, { name: 'readable' })
      const errors = await Promise.all(failed)
      assert.deepEqual(order, ['read', 'failed', 'failed', 'failed', 'failed'])
      for (const err of errors) assert.ok(isDatabaseUnavailable(err), String(err))
      assert.equal(d.sqlite!.isTransaction, false)
      holder.exec('rollback')
      assert.deepEqual(await d.db.selectFrom('owner').select('id').execute(), [{ id: 'r' }])

      // Let go of within the wait: every write goes through.
      holder.exec('begin immediate')
      const waiting = writes('2')
      setTimeout(() => holder.exec('commit'), 150)
      await Promise.all(waiting)
      const ids = (await d.db.selectFrom('owner').select('id').orderBy('id').execute()).map((row) => row.id)
      assert.deepEqual(ids, ['k2', 'p2', 'r', 's2', 't2'])
    } finally {
      holder.close()
      await d.close()
    }
  })

  test('a command that only reads opens a file on a read-only file system read-only; others are refused', async (t) => {
    const disk = mountFailingDisk('kit-db-failing-')
    t.after(() => disk.remove())
    const url = `sqlite:${join(disk.path, 'a.db')}`
    const { migrations } = makeMigrations()
    // The server: it holds the file, its log and the log's index when the disk fails.
    const writer = await openDatabase<DB>({ url, migrations })
    await writer.db.insertInto('owner').values({ id: 'o1', name: 'before the error' }).execute()
    disk.fail()
    await assert.rejects(writer.db.insertInto('owner').values({ id: 'o2', name: 'x' }).execute(), (err) =>
      isDatabaseUnavailable(err),
    )
    const names = async (d: Database<DB>) =>
      (await d.db.selectFrom('owner').select('name').execute()).map((r) => r.name)
    const refusedLine = (pattern: RegExp) => (err: unknown) => {
      assert.ok(err instanceof StartupError)
      assert.equal(err.lines.length, 1)
      assert.match(err.lines[0]!, pattern)
      return true
    }
    await assert.rejects(openDatabase({ url, migrations, create: false }), refusedLine(/cannot be opened: .*read-only/))

    const reader = await openDatabase<DB>({ url, migrations, create: false, readsOnly: true })
    try {
      // The committed row is in the write-ahead log: read through it, not around it.
      assert.deepEqual(await names(reader), ['before the error'])
      await assert.rejects(reader.db.insertInto('owner').values({ id: 'o3', name: 'x' }).execute(), (err) =>
        isDatabaseUnavailable(err),
      )
    } finally {
      await reader.close()
    }
    const newer = { ...migrations, '0003_more': { up: async () => {} } }
    await assert.rejects(
      openDatabase({ url, migrations: newer, create: false, readsOnly: true }),
      refusedLine(/read-only file system and needs migrations/),
    )
    await writer.close()
    const again = await openDatabase<DB>({ url, migrations, create: false, readsOnly: true })
    assert.deepEqual(await names(again), ['before the error'])
    await again.close()
  })

  test('a command that only reads opens a file with no log left (its last writer closed) on a read-only mount', async (t) => {
    const disk = mountSmallDisk('kit-db-ro-', 4)
    t.after(() => disk.remove())
    const url = `sqlite:${join(disk.path, 'a.db')}`
    const { migrations } = makeMigrations()
    const writer = await openDatabase<DB>({ url, migrations })
    await writer.db.insertInto('owner').values({ id: 'o1', name: 'checkpointed' }).execute()
    await writer.close()
    assert.equal(existsSync(join(disk.path, 'a.db-wal')), false)
    execFileSync('mount', ['-o', 'remount,ro', disk.path])
    const reader = await openDatabase<DB>({ url, migrations, create: false, readsOnly: true })
    try {
      assert.deepEqual(await reader.db.selectFrom('owner').select('name').execute(), [{ name: 'checkpointed' }])
    } finally {
      await reader.close()
    }
  })

  test('a file that cannot be opened is a StartupError', async () => {
    await assert.rejects(openDatabase({ url: `sqlite:${dir}` }), (err: unknown) => {
      assert.ok(err instanceof StartupError)
      assert.equal(err.lines.length, 1)
      assert.match(err.lines[0]!, /cannot be opened/)
      return true
    })
  })
})

describe('PostgreSQL prepared statements', () => {
  const fresh = async () => {
    pgServer ??= await startPostgres()
    return pgServer.createDatabase()
  }
  /** The texts prepared on the connection `db`'s transaction runs on, after running `work` there. */
  const preparedTexts = (d: Database<DB>, work: (trx: Kysely<DB>) => Promise<void>) =>
    d.db.transaction().execute(async (trx) => {
      await work(trx)
      const { rows } = await trx.executeQuery<{ statement: string }>(
        CompiledQuery.raw('select statement from pg_prepared_statements', []),
      )
      return rows.map((r) => r.statement)
    })

  test('registered texts run named on every pooled connection, others unnamed', async () => {
    const d = await openDatabase<DB>({ url: await fresh(), migrations: makeMigrations().migrations, poolSize: 3 })
    try {
      await d.db
        .insertInto('owner')
        .values([
          { id: 'a', name: 'A' },
          { id: 'b', name: 'B' },
        ])
        .execute()
      const byId = serverPrepared('select id, name from owner where id = $1')
      assert.equal(serverPrepared(byId), byId)
      // Twelve at once over three connections: each parses it once, every answer its own.
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => d.db.executeQuery(CompiledQuery.raw(byId, [i % 2 ? 'a' : 'b']))),
      )
      for (const [i, r] of answers.entries()) {
        assert.deepEqual(r.rows, [i % 2 ? { id: 'a', name: 'A' } : { id: 'b', name: 'B' }])
      }

      // Kysely's prepared queries stay unnamed: their plans could go stale (pg-prepared.ts).
      const nameOf = d.prepare(d.db.selectFrom('owner').select('name').where('id', '=', ''))
      const unregistered = 'select name from owner where id = $1 and name <> $2'
      const texts = await preparedTexts(d, async (trx) => {
        assert.deepEqual((await trx.executeQuery(CompiledQuery.raw(byId, ['a']))).rows, [{ id: 'a', name: 'A' }])
        assert.deepEqual(await nameOf.in(trx).first('b'), { name: 'B' })
        assert.deepEqual((await trx.executeQuery(CompiledQuery.raw(unregistered, ['a', '']))).rows, [{ name: 'A' }])
      })
      assert.deepEqual(texts, [byId])

      // A named statement's error rejects like any other, and it stays usable on that connection.
      const insert = serverPrepared('insert into owner (id, name) values ($1, $2)')
      for (let i = 0; i < 4; i++) {
        await assert.rejects(d.db.executeQuery(CompiledQuery.raw(insert, ['a', 'again'])), isUniqueViolation)
      }
      await Promise.all(
        ['c', 'd', 'e'].map((id) => d.db.executeQuery(CompiledQuery.raw(insert, [id, id.toUpperCase()]))),
      )
      assert.equal(Number((await sql<{ n: string }>`select count(*) as n from owner`.execute(d.db)).rows[0]!.n), 5)

      // A column added under it: PostgreSQL plans it again, and it answers as before.
      await sql`alter table owner add column note text`.execute(d.db)
      assert.deepEqual((await d.db.executeQuery(CompiledQuery.raw(byId, ['a']))).rows, [{ id: 'a', name: 'A' }])
    } finally {
      await d.close()
    }
  })

  test('?prepare=false in the URL sends every statement unnamed; any other value is refused', async () => {
    const url = await fresh()
    const d = await openDatabase<DB>({ url: `${url}?prepare=false`, migrations: makeMigrations().migrations })
    try {
      const byId = serverPrepared('select id from owner where id = $1')
      const texts = await preparedTexts(d, async (trx) => {
        assert.deepEqual((await trx.executeQuery(CompiledQuery.raw(byId, ['none']))).rows, [])
      })
      assert.deepEqual(texts, [])
    } finally {
      await d.close()
    }
    await assert.rejects(openDatabase({ url: `${url}?prepare=no` }), (err: unknown) => {
      assert.ok(err instanceof StartupError)
      assert.equal(err.lines[0], 'database URL: prepare=no must be true or false')
      return true
    })
  })
})

describe('PostgreSQL connections of their own', () => {
  const fresh = async () => {
    pgServer ??= await startPostgres()
    return pgServer.createDatabase()
  }
  const backendPid = async (q: (text: string) => Promise<{ rows: Array<Record<string, unknown>> }>) =>
    Number((await q('select pg_backend_pid() as pid')).rows[0]!.pid)

  test('connect() opens a session outside the pool, from a URL that carries the kit options', async () => {
    const d = await openDatabase<DB>({ url: `${await fresh()}?prepare=false` })
    try {
      const client = await d.connect!()
      try {
        const poolPid = await backendPid((text) => d.db.executeQuery(CompiledQuery.raw(text, [])))
        const ownPid = await backendPid((text) => client.query(text))
        assert.notEqual(ownPid, poolPid)
        // TCP keep-alive is on: the kernel shows its timer on the client's socket.
        const port = Number((await client.query('select inet_client_port() as port')).rows[0].port)
        const { stdout } = await execFileP('ss', ['-tnoH', 'state', 'established', `( sport = :${port} )`])
        assert.match(stdout, /timer:\(keepalive,/)
        // Session state stays on it: what LISTEN needs.
        await client.query("set application_name = 'kit-own-session'")
        assert.equal((await client.query('show application_name')).rows[0].application_name, 'kit-own-session')
      } finally {
        await client.end()
      }
    } finally {
      await d.close()
    }
    const lite = await openDatabase<DB>({ url: 'sqlite::memory:' })
    assert.equal(lite.connect, undefined)
    await lite.close()
  })

  test('while the server is down queries fail at once; after it restarts the pool serves again', async (t) => {
    const server = await startPostgres()
    t.after(() => server.stop())
    const d = await openDatabase<DB>({ url: await server.createDatabase(), migrations: makeMigrations().migrations })
    t.after(() => d.close())
    await d.db.insertInto('owner').values({ id: 'a', name: 'before' }).execute()
    // A service in front of it: a request that needs the database while it is down answers 503.
    const app = await createHttpApp({ name: 'dbapp', logger: createLogger({ name: 'dbapp', level: 'silent' }) })
    app.get('/owners', async () => d.db.selectFrom('owner').select('name').execute())
    const base = await app.listen({ port: 0, host: '127.0.0.1' })
    t.after(() => app.close())
    assert.equal((await fetch(`${base}/owners`)).status, 200)

    // The halt cuts the pooled connection while a query holds it: its error must not go unhandled.
    const inFlight = d.db.selectFrom('owner').select(sql<number>`pg_sleep(5)`.as('slept')).execute()
    const caught = inFlight.catch((err: unknown) => err)
    await waitFor('the query to run', async () => {
      const { rows } = await server.query(
        "select count(*)::int as n from pg_stat_activity where query like '%pg_sleep(5)%' and pid <> pg_backend_pid()",
      )
      return rows[0].n === 1
    })
    await server.halt()
    assert.ok(isDatabaseUnavailable(await caught), 'the cut query is an unavailable database')
    for (const attempt of [() => d.db.selectFrom('owner').selectAll().execute(), () => d.connect!(), () => d.ping()]) {
      await assert.rejects(attempt(), (err) => isDatabaseUnavailable(err))
    }
    const down = await fetch(`${base}/owners`)
    assert.equal(down.status, 503)
    assert.equal(down.headers.get('retry-after'), '5')
    assert.deepEqual(((await down.json()) as { error: unknown }).error, {
      code: 'unavailable',
      message: 'the database is unavailable',
    })

    await server.resume()
    // The first query after the restart succeeds: no dead connection is handed out.
    assert.deepEqual(await d.db.selectFrom('owner').select('name').execute(), [{ name: 'before' }])
    await d.ping()
    const client = await d.connect!()
    await client.end()
    assert.equal((await fetch(`${base}/owners`)).status, 200)

    // Not the database's: a refused outbound call, a constraint violation.
    const closed = await fetch(`http://127.0.0.1:${server.port}/`).catch((err: unknown) => err)
    assert.ok(closed instanceof Error && !isDatabaseUnavailable(closed))
    const duplicate = await d.db
      .insertInto('owner')
      .values({ id: 'a', name: 'again' })
      .execute()
      .catch((err: unknown) => err)
    assert.ok(isUniqueViolation(duplicate) && !isDatabaseUnavailable(duplicate))
  })

  test('a read-only server (a standby after a failover, or maintenance) is unavailable for writes; its sessions are not kept', async (t) => {
    const url = await fresh()
    const name = new URL(url).pathname.slice(1)
    const d = await openDatabase<DB>({ url, migrations: makeMigrations().migrations })
    t.after(() => d.close())
    await d.db.insertInto('owner').values({ id: 'a', name: 'before' }).execute()
    const write = (id: string) => d.db.insertInto('owner').values({ id, name: 'written' }).execute()

    // New sessions of the database start read-only, as on a hot standby; the pooled session is
    // ended, as a failover ends it, and the pool opens a new one.
    await pgServer!.query(`alter database ${name} set default_transaction_read_only = on`)
    await pgServer!.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`)
    await waitFor('the pool to reconnect', async () =>
      d.db
        .selectFrom('owner')
        .select('name')
        .execute()
        .then(
          (rows) => rows.length === 1,
          () => false,
        ),
    )
    const refused = await write('b').catch((err: unknown) => err)
    assert.equal((refused as { code?: string }).code, '25006', String(refused))
    assert.equal(isDatabaseUnavailable(refused), true)
    assert.match(unavailableAdvice(refused), /^it takes no writes \(a standby, .*point the database URL at the primary/)
    const inTransaction = await d.db
      .transaction()
      .execute((trx) => trx.insertInto('owner').values({ id: 'c', name: 'written' }).execute())
      .catch((err: unknown) => err)
    assert.equal((inTransaction as { code?: string }).code, '25006', String(inTransaction))

    // Writable again (the primary is back): a session that failed so was dropped, not returned
    // to the pool read-only, so the next write goes through on the first try.
    await pgServer!.query(`alter database ${name} reset default_transaction_read_only`)
    await write('b')
    await write('c')
    assert.deepEqual(
      (await d.db.selectFrom('owner').select('id').orderBy('id').execute()).map((r) => r.id),
      ['a', 'b', 'c'],
    )
  })

  test('a server that accepts and never answers fails connect() within the connect timeout', async (t) => {
    const url = await fresh()
    const relay = await startRelay(t, url)
    const d = await openDatabase<DB>({
      url: relay.url,
      connectTimeoutMs: 300,
    })
    try {
      relay.silent = true
      await assert.rejects(d.connect!(), /timeout/)
      assert.equal(relay.held.length, 1)
      // The pool's new connections have the same bound: a query fails instead of hanging.
      await assert.rejects(
        Promise.all(Array.from({ length: 3 }, () => sql`select pg_sleep(0.01)`.execute(d.db))),
        (err) => /timeout/.test((err as Error).message) && isDatabaseUnavailable(err),
      )
    } finally {
      await d.close()
    }
  })

  test('a connection reset in the middle of a query is an unavailable database, and the pool recovers', async (t) => {
    const url = await fresh()
    const relay = await startRelay(t, url)
    const d = await openDatabase<DB>({ url: relay.url })
    try {
      const slow = sql`select pg_sleep(5)`.execute(d.db).catch((err: unknown) => err)
      await waitFor('the server to run the query', async () => {
        const { rows } = await pgServer!.query(
          "select count(*)::int as n from pg_stat_activity where query = 'select pg_sleep(5)'",
        )
        return rows[0].n === 1
      })
      for (const socket of relay.open) socket.resetAndDestroy()
      const err = await slow
      assert.equal((err as { code?: string }).code, 'ECONNRESET')
      assert.ok(isDatabaseUnavailable(err), 'a reset of the database connection is an unavailable database')
      assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(d.db)).rows, [{ one: 1 }])
    } finally {
      await d.close()
    }
  })

  test('a server gone silent in the middle of a query fails it within the query timeout, and the pool recovers', async (t) => {
    const url = await fresh()
    const relay = await startRelay(t, url)
    // The migration takes longer than the timeout: migrations are not bounded by it.
    const migrations: Record<string, Migration> = {
      '0001_slow': {
        async up(db) {
          await sql`select pg_sleep(0.4)`.execute(db)
        },
      },
    }
    // Set in the URL, as an operator would; it wins over the option.
    const d = await openDatabase<DB>({ url: `${relay.url}?query_timeout=200ms`, queryTimeoutMs: 60_000, migrations })
    try {
      assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(d.db)).rows, [{ one: 1 }])
      relay.freeze()
      const err = await sql`select 2 as two`.execute(d.db).catch((e: unknown) => e)
      assert.match((err as Error).message, /^the database did not answer within 200 ms$/)
      assert.ok(isDatabaseUnavailable(err), 'a silent server is an unavailable database (503)')
      // The frozen connection is gone: the next query gets a new one.
      assert.deepEqual((await sql<{ three: number }>`select 3 as three`.execute(d.db)).rows, [{ three: 3 }])

      // In a transaction: the ROLLBACK that follows fails at once instead of waiting behind the query.
      const inTransaction = await d.db
        .transaction()
        .execute(async (trx) => {
          await sql`select 4`.execute(trx)
          relay.freeze()
          await sql`select 5`.execute(trx)
        })
        .catch((e: unknown) => e)
      assert.match((inTransaction as Error).message, /did not answer within 200 ms/)
      assert.deepEqual((await sql<{ six: number }>`select 6 as six`.execute(d.db)).rows, [{ six: 6 }])
    } finally {
      await d.close()
    }
  })
})

describe('database URLs and reachability', () => {
  test('query_timeout in a PostgreSQL URL: a duration or milliseconds, removed from the URL; anything else is a StartupError', () => {
    assert.deepEqual(queryTimeoutOption('postgres://u@h/db?query_timeout=90s&sslmode=disable'), {
      connectionString: 'postgres://u@h/db?sslmode=disable',
      queryTimeoutMs: 90_000,
    })
    assert.equal(queryTimeoutOption('postgres://u@h/db?query_timeout=2500').queryTimeoutMs, 2500)
    assert.equal(queryTimeoutOption('postgres://u@h/db?query_timeout=0').queryTimeoutMs, 0)
    assert.deepEqual(queryTimeoutOption('postgres://u@h/db'), { connectionString: 'postgres://u@h/db' })
    for (const bad of ['soon', '', '5 s', '-1']) {
      assert.throws(
        () => queryTimeoutOption(`postgres://u@h/db?query_timeout=${bad}`),
        (err: unknown) => err instanceof StartupError && /^database URL: query_timeout=/.test(err.message),
        bad,
      )
    }
  })

  test('bad URL schemes are StartupErrors', async () => {
    for (const url of ['mysql://u:p@h/db', 'sqlite:', 'postgres://[bad', 'file:/x.db']) {
      await assert.rejects(openDatabase({ url }), (err: unknown) => {
        assert.ok(err instanceof StartupError, url)
        assert.equal(err.lines.length, 1)
        assert.doesNotMatch(err.lines[0]!, /\bp@|:p\b/)
        return true
      })
    }
  })

  test('an unreachable PostgreSQL server is one line without the password', async () => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1')
    await once(srv, 'listening')
    const port = (srv.address() as { port: number }).port
    srv.close()
    await once(srv, 'close')
    await assert.rejects(openDatabase({ url: `postgres://app:hunter2@127.0.0.1:${port}/gate` }), (err: unknown) => {
      assert.ok(err instanceof StartupError)
      assert.equal(err.lines.length, 1)
      assert.match(
        err.lines[0]!,
        new RegExp(`^database postgres://app:\\*\\*\\*@127\\.0\\.0\\.1:${port}/gate is unreachable: `),
      )
      assert.doesNotMatch(err.lines[0]!, /hunter2/)
      assert.doesNotMatch(err.lines[0]!, /\n/)
      return true
    })
  })
})
