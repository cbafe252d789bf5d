/**
 * The store side of a resync (the control plane's database went back in time): pulled verdicts
 * are marked, an authoritative full answer replaces newer pulled ones, those it does not hold go
 * back to undecided with an automated block's expiry cleared, and the gate's own verdicts stay.
 * The upgrade: rows from before the mark start as the gate's own and the policy cursor is
 * cleared, so the next sync pulls everything again and marks them.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Decision } from '@gatehouse/kit'
import { openDatabase } from '@gatehouse/kit/db/database.ts'
import { dropUnlistedPulled, getSyncState, POLICY_CURSOR_KEY, setSyncState } from '@gatehouse/kit/gate-store.ts'
import { tempDir } from '@gatehouse/testkit'
import { openStore } from '../src/db/index.ts'
import * as m0001 from '../src/db/migrations/0001_init.ts'
import { setVerdict } from '../src/fingerprints/store.ts'
import { applyDecisions } from '../src/fingerprints/sync-store.ts'

const fp = (c: string) => c.repeat(32)
const at = (s: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, s)).toISOString()
const decision = (c: string, status: Decision['status'], s: number, extra: Record<string, unknown> = {}) =>
  ({
    scope_type: 'instance',
    scope_id: 'tls-1',
    fingerprint: fp(c),
    status,
    label: `label ${c}`,
    updated_at: at(s),
    actor: 'admin:ops',
    ...extra,
  }) as Decision

test('a resync replaces and drops pulled verdicts, clears their expiry, and keeps the gate’s own', async (t) => {
  const dir = tempDir('tlsgate-resync-')
  t.after(() => dir.remove())
  const store = await openStore(join(dir.path, 'tlsgate.db'))
  t.after(() => store.close())
  const cursor = (value: string) => ({ key: POLICY_CURSOR_KEY, value })
  const expires = new Date(Date.now() + 3_600_000).toISOString()
  await applyDecisions(
    store.db,
    [
      decision('a', 'approved', 1),
      decision('b', 'blocked', 2, { actor: 'web-controller', expires_at: expires }),
      decision('c', 'blocked', 3),
    ],
    at(3),
    cursor(at(3)),
  )
  await applyDecisions(store.db, [decision('d', 'approved', 4)], at(4), cursor(at(4)))
  assert.ok(await setVerdict(store.db, fp('d'), { verdict: 'blocked', actor: 'cli:ops', now: at(5) }))
  const rows = async () =>
    Object.fromEntries(
      (await store.db.selectFrom('fingerprints').selectAll().execute()).map((r) => [
        r.fingerprint[0],
        [r.decided_at === null ? 'undecided' : r.verdict, r.pulled, r.expires_at === null ? '-' : 'expires', r.label],
      ]),
    )
  assert.deepEqual(await rows(), {
    a: ['approved', 1, '-', 'label a'],
    b: ['blocked', 1, 'expires', 'label b'],
    c: ['blocked', 1, '-', 'label c'],
    d: ['blocked', 0, '-', 'label d'],
  })

  // The restored control plane holds a (approved at 1) and c as it was before (approved at 0, older
  // than the blocked one pulled later), not b; and d as approved at 1, older than the gate's own block.
  const full = [decision('a', 'approved', 1), decision('c', 'approved', 0), decision('d', 'approved', 1)]
  await applyDecisions(store.db, full, at(10), cursor(at(1)))
  assert.equal((await rows()).c![0], 'blocked', 'outside a resync, last writer wins')
  await applyDecisions(store.db, full, at(10), cursor(at(1)), true)
  const dropped = await dropUnlistedPulled(store.db, new Set(full.map((d) => d.fingerprint)), at(10))
  assert.deepEqual(dropped, [fp('b')])
  assert.deepEqual(await rows(), {
    a: ['approved', 1, '-', 'label a'],
    b: ['undecided', 0, '-', ''],
    c: ['approved', 1, '-', 'label c'],
    d: ['blocked', 0, '-', 'label d'],
  })
})

test('the upgrade: verdicts from before the mark count as the gate’s own, and the policy cursor is cleared', async (t) => {
  const dir = tempDir('tlsgate-resync-upgrade-')
  t.after(() => dir.remove())
  const file = join(dir.path, 'tlsgate.db')
  const old = await openDatabase<never>({ url: `sqlite:${file}`, migrations: { '0001_init': m0001 } })
  await setSyncState(old.db as never, POLICY_CURSOR_KEY, at(9), at(9))
  await setSyncState(old.db as never, 'upload_ack_seq', '7', at(9))
  await old.close()
  const store = await openStore(file)
  t.after(() => store.close())
  assert.equal(await getSyncState(store.db, POLICY_CURSOR_KEY), undefined, 'the next sync pulls everything again')
  assert.equal(await getSyncState(store.db, 'upload_ack_seq'), '7', 'uploads go on where they were')
})
