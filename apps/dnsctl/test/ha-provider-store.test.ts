/**
 * The HA and provider stores (migration 0004) on SQLite and PostgreSQL. dnsctl itself runs on
 * SQLite (its first migrations use SQLite types), so PostgreSQL gets 0004 alone, the way the
 * metrics-history suite checks its store.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { openDatabase } from '@gatehouse/kit'
import { type Postgres, startPostgres, tempDir } from '@gatehouse/testkit'
import { haAndProvider } from '../src/db/migrations/0004_ha_and_provider.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { appendHaEvent, listHaEvents, readHaState, removeHaEventsBefore, writeHaState } from '../src/ha/store.ts'
import { commitAllowlist, currentAllowlist, listAllowlistRevisions } from '../src/provider/allowlist.ts'

let pg: Postgres | undefined
after(() => pg?.stop())

const dialects: [string, () => Promise<{ url: string; migrations: typeof migrations }>][] = [
  ['sqlite', async () => ({ url: `sqlite:${join(tempDir('dnsctl-ha-store-').path, 'h.db')}`, migrations })],
  [
    'postgres',
    async () => {
      pg ??= await startPostgres()
      return { url: await pg.createDatabase(), migrations: { '0004_ha_and_provider': haAndProvider } }
    },
  ],
]

for (const [dialect, open] of dialects) {
  describe(`HA and provider stores (${dialect})`, () => {
    test('the stored role is one row, replaced by each role change; events list newest first', async () => {
      const database = await openDatabase<DB>(await open())
      try {
        const { db } = database
        assert.equal(await readHaState(db), undefined)
        const meta = { actor: 'ops', request_id: 'r1' }
        const at = { changed_at: '2026-11-25T10:00:00.000Z', ...meta }
        await writeHaState(db, { role: 'primary', epoch: 1, fenced_by_epoch: 2, ...at })
        assert.equal(Number((await readHaState(db))?.fenced_by_epoch), 2)
        await writeHaState(db, { role: 'secondary', epoch: 2, fenced_by_epoch: null, ...at })
        const state = await readHaState(db)
        assert.deepEqual([state?.role, Number(state?.epoch), state?.fenced_by_epoch], ['secondary', 2, null])
        for (const [at, outcome] of [
          ['2026-11-25T10:00:00.000Z', 'refused'],
          ['2026-11-25T10:05:00.000Z', 'committed'],
        ] as const) {
          await appendHaEvent(db, {
            at,
            action: 'promote',
            outcome,
            from_role: 'secondary',
            to_role: 'primary',
            epoch: 0,
            detail: '{}',
            ...meta,
          })
        }
        assert.deepEqual(
          (await listHaEvents(db, 10)).map((e) => e.outcome),
          ['committed', 'refused'],
        )
        // The audit retention: events before the cutoff go (batches of 2, so the edge repeats).
        for (let minute = 6; minute < 11; minute++) {
          const at = `2026-11-25T10:${String(minute).padStart(2, '0')}:00.000Z`
          await appendHaEvent(db, {
            at,
            action: 'demote',
            outcome: 'failed',
            from_role: 'primary',
            to_role: 'secondary',
            epoch: 0,
            detail: '{}',
            ...meta,
          })
        }
        assert.equal(await removeHaEventsBefore(db, Date.parse('2026-11-25T10:08:00.000Z'), 2), 4)
        assert.deepEqual(
          (await listHaEvents(db, 10)).map((e) => e.at.slice(11, 16)),
          ['10:10', '10:09', '10:08'],
        )
      } finally {
        await database.close()
      }
    })

    test('the allowlist: the environment until a commit, then the newest revision', async () => {
      const database = await openDatabase<DB>(await open())
      try {
        const { db } = database
        const env = await currentAllowlist(db, ['b.test', 'a.test'])
        assert.deepEqual([env.source, env.zones], ['environment', ['a.test', 'b.test']])
        const meta = { actor: 'ops', request_id: 'r1', committed_at: '2026-11-25T10:00:00.000Z' }
        const r1 = await commitAllowlist(db, { zones: ['a.test'], ...meta })
        const r2 = await commitAllowlist(db, { zones: ['a.test', 'c.test'], ...meta })
        assert.notEqual(r1, r2)
        const now = await currentAllowlist(db, ['b.test'])
        assert.deepEqual([now.source, now.revision, now.zones], ['committed', r2, ['a.test', 'c.test']])
        assert.deepEqual(
          (await listAllowlistRevisions(db, 10)).map((r) => r.revision),
          [r2, r1],
        )
      } finally {
        await database.close()
      }
    })
  })
}
