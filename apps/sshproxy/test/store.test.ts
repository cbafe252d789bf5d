/**
 * The SQLite store: bounds on history, the entry cap, trimming databases written with larger
 * limits, sighting retention, and the functions the control-plane sync builds on.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { openDatabase } from '@gatehouse/kit/db/database.ts'
import { markExpiries } from '@gatehouse/kit/gate-verdict.ts'
import { tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { sql } from 'kysely'
import { migrations, openStore, type Store } from '../src/db/index.ts'
import {
  deleteEntry,
  gateStatus,
  gateStatusReader,
  getEntry,
  listEntries,
  type Observation,
  pruneToCap,
  recordObservations,
  removeExpiredSightings,
  setLabel,
  setVerdict,
} from '../src/fingerprints/store.ts'
import {
  applyDecisions,
  changedSince,
  compareTimes,
  getSyncState,
  setSyncState,
} from '../src/fingerprints/sync-store.ts'

async function fresh(t: { after: (fn: () => unknown) => void }): Promise<{ store: Store; path: string }> {
  const dir = tempDir('sshproxy-store-')
  const path = join(dir.path, 'gate.db')
  const store = await openStore(path)
  t.after(async () => {
    await store.close()
    dir.remove()
  })
  return { store, path }
}

const fp = (n: number) => n.toString(16).padStart(32, '0')
const at = (second: number) => new Date(Date.UTC(2026, 10, 22, 6, 0, second)).toISOString()

function obs(n: number, second: number, extra: Partial<Observation> = {}): Observation {
  return {
    fingerprint: fp(n),
    identification: 'SSH-2.0-test_1.0',
    clientVersion: 'test_1.0',
    metadata: '{"kex_algorithms":"x"}',
    count: 1,
    enrolled: 0,
    firstSeen: at(second),
    lastSeen: at(second),
    sightings: [{ ip: '192.0.2.1', port: 40000 + n, last_seen: at(second) }],
    ...extra,
  }
}

test('new entries are pending and undecided (unknown to the gate); decisions change that', async (t) => {
  const { store } = await fresh(t)
  const reader = gateStatusReader(store)
  // The gate's prepared reader and the Kysely query answer the same at every step.
  const status = async (f: string) => {
    const viaKysely = await gateStatus(store.db, f)
    assert.equal(await reader(f), viaKysely)
    return viaKysely
  }
  await recordObservations(store.db, [obs(1, 1)], 100, at(1))
  assert.equal(await status(fp(1)), 'unknown')
  assert.equal(await status(fp(2)), 'unknown')
  assert.equal(await setVerdict(store.db, fp(1), { verdict: 'pending', actor: 'cli:t', now: at(2) }), true)
  assert.equal(await status(fp(1)), 'pending')
  assert.equal(await setVerdict(store.db, fp(1), { verdict: 'approved', actor: 'cli:t', label: 'x', now: at(3) }), true)
  assert.equal(await status(fp(1)), 'approved')
  assert.equal((await getEntry(store.db, fp(1)))!.label, 'x')
  assert.equal(await setVerdict(store.db, fp(9), { verdict: 'blocked', actor: 'cli:t', now: at(3) }), false)
  assert.equal(await setLabel(store.db, fp(9), 'y', at(3)), false)
  assert.equal(await deleteEntry(store.db, fp(1)), true)
  assert.equal(await deleteEntry(store.db, fp(1)), false)
})

test("the gate's verdict reader sees another process's decision on the next lookup (remembered verdicts)", async (t) => {
  const { store, path } = await fresh(t)
  const reader = gateStatusReader(store)
  await recordObservations(store.db, [obs(1, 1)], 100, at(1))
  // A second connection, as `sshproxy approve` in another process opens.
  const cli = await openStore(path)
  t.after(() => cli.close())
  for (let i = 0; i < 3; i++) assert.equal(await reader(fp(1)), 'unknown') // now remembered
  await setVerdict(cli.db, fp(1), { verdict: 'approved', actor: 'cli:t', now: at(2) })
  assert.equal(await reader(fp(1)), 'approved')
  assert.equal(await reader(fp(1)), 'approved')
  await setVerdict(cli.db, fp(1), { verdict: 'blocked', actor: 'cli:t', now: at(3) })
  assert.equal(await reader(fp(1)), 'blocked')
  assert.equal(await deleteEntry(cli.db, fp(1)), true)
  assert.equal(await reader(fp(1)), 'unknown')
})

test("the gate's verdict reader waits behind an open transaction and never sees its uncommitted change", async (t) => {
  const { store } = await fresh(t)
  const reader = gateStatusReader(store)
  await recordObservations(store.db, [obs(1, 1)], 100, at(1))
  await setVerdict(store.db, fp(1), { verdict: 'approved', actor: 'cli:t', now: at(2) })
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  // A block that is rolled back: a lookup during it must not act on it.
  const tx = store.db
    .transaction()
    .execute(async (trx) => {
      await trx.updateTable('fingerprints').set({ verdict: 'blocked' }).where('fingerprint', '=', fp(1)).execute()
      await held
      throw new Error('rolled back')
    })
    .catch((err: Error) => err.message)
  await new Promise((r) => setImmediate(r))
  const during = reader(fp(1))
  release()
  assert.equal(await tx, 'rolled back')
  assert.equal(await during, 'approved')
  // And a committed block is what the next lookup sees.
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 'cli:t', now: at(3) })
  assert.equal(await reader(fp(1)), 'blocked')
})

test('IPs and ports keep the first 128 in sorted order; sightings keep the 128 most recent', async (t) => {
  const { store } = await fresh(t)
  const sightings = Array.from({ length: 300 }, (_, i) => ({
    ip: `10.0.${Math.floor(i / 200)}.${i % 200}`,
    port: 1000 + i,
    last_seen: at(i % 60),
  }))
  for (let i = 0; i < 3; i++) {
    await recordObservations(store.db, [obs(1, i, { sightings: sightings.slice(i * 100, i * 100 + 100) })], 100, at(i))
  }
  const e = (await getEntry(store.db, fp(1)))!
  assert.equal(e.count, 3)
  assert.equal(e.ips.length, 128)
  assert.equal(e.ips[0], '10.0.0.0')
  assert.equal(e.ips[2], '10.0.0.2') // numeric, not text order (10.0.0.10 would come before 10.0.0.2)
  assert.equal(e.ips.at(-1), '10.0.0.127')
  assert.deepEqual(
    e.ports,
    Array.from({ length: 128 }, (_, i) => 1000 + i),
  )
  assert.equal(e.sightings.length, 128)
  const newest = e.sightings.map((s) => s.last_seen)
  assert.deepEqual(newest, [...newest].sort().reverse())
  assert.equal(newest[0], at(59))
})

test('the cap prunes the oldest non-approved entries first, in the same write; approved stay; -1 is unlimited', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 2), obs(3, 3)], 10, at(3))
  await setVerdict(store.db, fp(1), { verdict: 'approved', actor: 't', now: at(4) })
  const { pruned } = await recordObservations(store.db, [obs(4, 4), obs(5, 5)], 3, at(5))
  assert.equal(pruned, 2)
  assert.deepEqual((await listEntries(store.db)).map((e) => e.fingerprint).sort(), [fp(1), fp(4), fp(5)])
  await recordObservations(store.db, [obs(6, 6), obs(7, 7)], -1, at(7))
  assert.equal((await listEntries(store.db)).length, 5)
  // Periodic pruning (e.g. after rows came from policy sync) with only approved entries left to keep.
  for (const n of [4, 5, 6, 7]) await setVerdict(store.db, fp(n), { verdict: 'approved', actor: 't', now: at(8) })
  assert.equal(await pruneToCap(store.db, 2), 0)
  assert.equal((await listEntries(store.db)).length, 5)
})

test('an expired approval counts as pending for the cap; one still in force is kept', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 2), obs(3, 3)], 10, at(3))
  await setVerdict(store.db, fp(1), { verdict: 'approved', actor: 't', now: at(4), expiresAt: at(10) })
  await setVerdict(store.db, fp(2), { verdict: 'approved', actor: 't', now: at(4), expiresAt: at(100) })
  await setVerdict(store.db, fp(3), { verdict: 'approved', actor: 't', now: at(4) })
  assert.equal(await pruneToCap(store.db, 1, at(9)), 0, 'before the expiry every approval stays')
  assert.equal(await pruneToCap(store.db, 1, at(50)), 1)
  assert.deepEqual((await listEntries(store.db)).map((e) => e.fingerprint).sort(), [fp(2), fp(3)])
})

test('an expiry is marked as a change once, so the next upload reports the entry as pending', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 2), obs(3, 3)], 10, at(3))
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 't', now: at(4), expiresAt: at(10) })
  await setVerdict(store.db, fp(2), { verdict: 'approved', actor: 't', now: at(4), expiresAt: at(20) })
  await setVerdict(store.db, fp(3), { verdict: 'blocked', actor: 't', now: at(4) })
  const uploaded = Math.max(...(await changedSince(store.db, 0, 10)).map((e) => e.change_seq))
  assert.equal(await markExpiries(store.db, at(9)), 0, 'nothing has expired yet')
  assert.deepEqual(await changedSince(store.db, uploaded, 10), [])
  assert.equal(await markExpiries(store.db, at(15)), 1)
  assert.deepEqual(
    (await changedSince(store.db, uploaded, 10)).map((e) => e.fingerprint),
    [fp(1)],
  )
  const next = Math.max(...(await changedSince(store.db, uploaded, 10)).map((e) => e.change_seq))
  assert.equal(await markExpiries(store.db, at(16)), 0, 'an expiry is marked once')
  assert.equal(await markExpiries(store.db, at(25)), 1)
  assert.deepEqual(
    (await changedSince(store.db, next, 10)).map((e) => e.fingerprint),
    [fp(2)],
  )
})

test('the cap prunes undecided entries before any decision: a flood of new fingerprints cannot push out an old block', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 2)], 10, at(2))
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 't', now: at(3) })
  await setVerdict(store.db, fp(2), { verdict: 'pending', actor: 't', now: at(3) })
  // Five new clients, each seen after the block and the pending decision, over a cap of 3.
  const { pruned } = await recordObservations(
    store.db,
    [3, 4, 5, 6, 7].map((i) => obs(i, i + 10)),
    3,
    at(20),
  )
  assert.equal(pruned, 4)
  assert.deepEqual((await listEntries(store.db)).map((e) => e.fingerprint).sort(), [fp(1), fp(2), fp(7)])
  // Decided entries alone over the cap: the count cap still holds, least recently seen first.
  assert.equal(await pruneToCap(store.db, 1), 2)
  assert.deepEqual(
    (await listEntries(store.db)).map((e) => e.fingerprint),
    [fp(2)],
  )
})

test('opening a database with oversized metadata and history trims them and keeps verdicts, labels and counts', async (t) => {
  const { store, path } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1)], 100, at(1))
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 't', label: 'keep me', now: at(2) })
  const many = JSON.stringify(Array.from({ length: 500 }, (_, i) => `10.1.${i >> 8}.${i & 255}`))
  const manySightings = JSON.stringify(
    Array.from({ length: 500 }, (_, i) => ({ ip: '10.9.9.9', port: i + 1, last_seen: at(i % 60) })),
  )
  await sql`update fingerprints set metadata = ${JSON.stringify({ blob: 'x'.repeat(70_000) })}, ips = ${many},
            ports = ${JSON.stringify(Array.from({ length: 500 }, (_, i) => i))}, sightings = ${manySightings}, count = 777`.execute(
    store.db,
  )
  await store.close()
  const reopened = await openStore(path)
  t.after(() => reopened.close())
  const e = (await getEntry(reopened.db, fp(1)))!
  assert.deepEqual(e.metadata, {})
  assert.equal(e.ips.length, 128)
  assert.equal(e.ports.length, 128)
  assert.equal(e.sightings.length, 128)
  assert.equal(e.verdict, 'blocked')
  assert.equal(e.label, 'keep me')
  assert.equal(e.count, 777)
})

test('sighting retention drops old sightings only', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(
    store.db,
    [
      obs(1, 50, {
        sightings: [
          { ip: '192.0.2.1', port: 1, last_seen: at(10) },
          { ip: '192.0.2.2', port: 2, last_seen: at(50) },
        ],
      }),
    ],
    100,
    at(50),
  )
  assert.equal(await removeExpiredSightings(store.db, at(30)), 1)
  const e = (await getEntry(store.db, fp(1)))!
  assert.deepEqual(
    e.sightings.map((s) => s.ip),
    ['192.0.2.2'],
  )
  assert.deepEqual(e.ips, ['192.0.2.1', '192.0.2.2'])
  assert.equal(e.count, 1)
})

test('sync: changes since the last acknowledged upload, in pages, with a sequence that never repeats', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 2)], 100, at(2))
  const first = await changedSince(store.db, 0, 16)
  assert.deepEqual(first.map((e) => e.fingerprint).sort(), [fp(1), fp(2)])
  const ack = Math.max(...first.map((e) => e.change_seq))
  await setSyncState(store.db, 'upload_ack_seq', String(ack), at(3))
  assert.equal(await getSyncState(store.db, 'upload_ack_seq'), String(ack))
  assert.deepEqual(await changedSince(store.db, ack, 16), [])
  // Deleting the newest entry must not let a later change reuse its sequence number.
  await deleteEntry(store.db, fp(2))
  await setLabel(store.db, fp(1), 'changed', at(4))
  const next = await changedSince(store.db, ack, 16)
  assert.deepEqual(
    next.map((e) => e.fingerprint),
    [fp(1)],
  )
  assert.ok(next[0]!.change_seq > ack)
  await recordObservations(
    store.db,
    Array.from({ length: 20 }, (_, i) => obs(100 + i, 5)),
    100,
    at(5),
  )
  assert.equal((await changedSince(store.db, ack, 16)).length, 16)
})

test('sync: pulled decisions apply atomically with the cursor; older decisions do not override newer local ones', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1)], 100, at(1))
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 'cli:t', now: at(30) })
  const changed = await applyDecisions(
    store.db,
    [
      { fingerprint: fp(1), status: 'approved', label: 'old', updated_at: at(10), actor: 'cp' },
      { fingerprint: fp(2), status: 'approved', label: 'from cp', updated_at: at(20), actor: 'cp' },
    ],
    at(40),
    { key: 'policy_cursor', value: at(20) },
  )
  assert.equal(changed, 1)
  assert.equal(await gateStatus(store.db, fp(1)), 'blocked')
  assert.equal(await gateStatus(store.db, fp(2)), 'approved')
  assert.equal(await getSyncState(store.db, 'policy_cursor'), at(20))
  // One bad decision rolls back the whole batch, cursor included.
  await assert.rejects(
    applyDecisions(
      store.db,
      [
        { fingerprint: fp(3), status: 'approved', label: '', updated_at: at(50), actor: 'cp' },
        { fingerprint: fp(4), status: 'bogus' as 'approved', label: '', updated_at: at(50), actor: 'cp' },
      ],
      at(50),
      { key: 'policy_cursor', value: at(50) },
    ),
  )
  assert.equal(await getEntry(store.db, fp(3)), undefined)
  assert.equal(await getSyncState(store.db, 'policy_cursor'), at(20))
})

test('sync: control-plane times (6 fraction digits) and local ones (3) compare by time, not by text', async (t) => {
  const { store } = await fresh(t)
  await recordObservations(store.db, [obs(1, 1), obs(2, 1)], 100, at(1))
  // Local decisions at .123 (the gate writes milliseconds).
  await setVerdict(store.db, fp(1), { verdict: 'blocked', actor: 'cli:t', now: '2026-11-22T06:00:10.123Z' })
  await setVerdict(store.db, fp(2), { verdict: 'blocked', actor: 'cli:t', now: '2026-11-22T06:00:10.123Z' })
  const changed = await applyDecisions(
    store.db,
    [
      // 0.5 ms after the local decision: newer, applies (as text ".123456Z" sorts before ".123Z").
      {
        fingerprint: fp(1),
        status: 'approved',
        label: 'newer',
        updated_at: '2026-11-22T06:00:10.123456Z',
        actor: 'cp',
      },
      // 0.9 ms before it: older, skipped (as text ".122100Z" vs ".123Z" happens to agree, the time decides).
      {
        fingerprint: fp(2),
        status: 'approved',
        label: 'older',
        updated_at: '2026-11-22T06:00:10.122100Z',
        actor: 'cp',
      },
    ],
    at(40),
  )
  assert.equal(changed, 1)
  assert.equal(await gateStatus(store.db, fp(1)), 'approved')
  assert.equal((await getEntry(store.db, fp(1)))?.label, 'newer')
  assert.equal(await gateStatus(store.db, fp(2)), 'blocked')
  // An equal time (same instant, different precision) applies: the control plane wins ties.
  assert.equal(
    await applyDecisions(
      store.db,
      [{ fingerprint: fp(2), status: 'pending', label: '', updated_at: '2026-11-22T06:00:10.123000Z', actor: 'cp' }],
      at(41),
    ),
    1,
  )
  assert.equal(await gateStatus(store.db, fp(2)), 'pending')
})

test("sync: a pulled decision ends at its expiry on the gate itself; the CLI's verdicts never expire", async (t) => {
  const { store } = await fresh(t)
  const reader = gateStatusReader(store)
  const until = '2026-11-22T07:00:00.000000Z'
  const before = Date.parse(until) - 1000
  const after = Date.parse(until) + 1000
  await applyDecisions(
    store.db,
    [
      {
        fingerprint: fp(1),
        status: 'blocked',
        label: 'for an hour',
        updated_at: at(10),
        actor: 'cp',
        expires_at: until,
      },
      {
        fingerprint: fp(2),
        status: 'approved',
        label: 'for a while',
        updated_at: at(10),
        actor: 'cp',
        expires_at: until,
      },
      { fingerprint: fp(3), status: 'blocked', label: 'for good', updated_at: at(10), actor: 'cp' },
      // An expiry the gate cannot read is no expiry (the control plane validates it; an old or odd peer may not).
      { fingerprint: fp(4), status: 'blocked', label: '', updated_at: at(10), actor: 'cp', expires_at: 'soon' },
    ],
    at(11),
  )
  assert.equal(await gateStatus(store.db, fp(1), before), 'blocked')
  assert.equal(await gateStatus(store.db, fp(1), after), 'pending')
  assert.equal(await reader(fp(1), before), 'blocked')
  assert.equal(await reader(fp(1), after), 'pending', 'the remembered row still expires with time')
  assert.equal(await reader(fp(2), after), 'pending', 'an approval for a while ends too')
  assert.equal(await reader(fp(3), after), 'blocked')
  assert.equal(await reader(fp(4), after), 'blocked')
  assert.equal(
    (await getEntry(store.db, fp(1)))?.expires_at,
    '2026-11-22T07:00:00.000Z',
    'stored as UTC with milliseconds',
  )
  assert.equal((await getEntry(store.db, fp(4)))?.expires_at, null)
  // A later decision without an expiry makes it permanent.
  await applyDecisions(
    store.db,
    [{ fingerprint: fp(1), status: 'blocked', label: 'for good now', updated_at: at(20), actor: 'cp' }],
    at(21),
  )
  assert.equal(await reader(fp(1), after), 'blocked')
  // The gate's own verdict replaces a pulled one with its expiry, and keeps no expiry.
  await setVerdict(store.db, fp(2), { verdict: 'approved', actor: 'cli:t', now: at(30) })
  assert.equal((await getEntry(store.db, fp(2)))?.expires_at, null)
  assert.equal(await reader(fp(2), after), 'approved')
})

test('upgrading a store from before expiries clears the policy cursor once, so every decision is pulled again with its expiry', async (t) => {
  const dir = tempDir('sshproxy-store-upgrade-')
  t.after(() => dir.remove())
  const path = join(dir.path, 'gate.db')
  const { '0004_decision_expiry': _, '0005_expiry_index': __, ...before } = migrations
  const old = await openDatabase<never>({ url: `sqlite:${path}`, migrations: before })
  await setSyncState(old.db as never, 'policy_cursor', at(9), at(9))
  await setSyncState(old.db as never, 'upload_ack_seq', '7', at(9))
  await old.close()
  const store = await openStore(path)
  t.after(() => store.close())
  assert.equal(await getSyncState(store.db, 'policy_cursor'), undefined)
  assert.equal(await getSyncState(store.db, 'upload_ack_seq'), '7', 'uploads go on where they were')
  await applyDecisions(
    store.db,
    [{ fingerprint: fp(1), status: 'blocked', label: '', updated_at: at(10), actor: 'cp', expires_at: at(20) }],
    at(11),
  )
  assert.equal(await gateStatus(store.db, fp(1), Date.parse(at(21))), 'pending')
})

test('expiries are stored as UTC ISO text, pulled or upgraded, and the maintenance reads them by index', async (t) => {
  const dir = tempDir('sshproxy-store-expiry-index-')
  t.after(() => dir.remove())
  const path = join(dir.path, 'gate.db')
  const { '0005_expiry_index': _, ...before } = migrations
  const old = await openDatabase<never>({ url: `sqlite:${path}`, migrations: before })
  await recordObservations(old.db as never, [obs(1, 1), obs(2, 2)], 10, at(2))
  // An older version stored a pulled expiry as sent: an offset, microseconds.
  await sql`update fingerprints set verdict = 'blocked', decided_at = ${at(3)}, expires_at = '2026-11-22T08:00:10.000001+02:00'
    where fingerprint = ${fp(1)}`.execute(old.db)
  await old.close()
  const store = await openStore(path)
  t.after(() => store.close())
  assert.equal((await getEntry(store.db, fp(1)))?.expires_at, at(10))
  await applyDecisions(
    store.db,
    [
      {
        fingerprint: fp(2),
        status: 'blocked',
        label: '',
        updated_at: at(4),
        actor: 'cp',
        expires_at: '2026-11-22T05:00:20.5-01:00',
      },
    ],
    at(5),
  )
  assert.equal((await getEntry(store.db, fp(2)))?.expires_at, at(20).replace('.000Z', '.500Z'))
  const plan = await sql<{ detail: string }>`explain query plan select fingerprint from fingerprints
    where expires_at <= ${at(30)} and expires_at > ${at(0)}`.execute(store.db)
  assert.match(plan.rows.map((r) => r.detail).join('; '), /USING (COVERING )?INDEX fingerprints_expires_at/)
  assert.equal(await markExpiries(store.db, at(30)), 2)
})

test('compareTimes orders any two RFC 3339 times like their instants, whatever the fraction digits', () => {
  const instant = fc.record({
    ms: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    us: fc.integer({ min: 0, max: 999 }),
  })
  fc.assert(
    fc.property(instant, instant, fc.boolean(), fc.boolean(), (a, b, sixA, sixB) => {
      const text = (x: { ms: number; us: number }, six: boolean) => {
        const iso = new Date(x.ms).toISOString()
        return six ? iso.replace('Z', `${String(x.us).padStart(3, '0')}Z`) : iso
      }
      const value = (x: { ms: number; us: number }, six: boolean) => x.ms * 1000 + (six ? x.us : 0)
      const expected = Math.sign(value(a, sixA) - value(b, sixB))
      assert.equal(compareTimes(text(a, sixA), text(b, sixB)), expected)
    }),
  )
  assert.equal(compareTimes('2026-11-22T08:00:00.5+02:00', '2026-11-22T06:00:00.499999Z'), 1)
  assert.equal(compareTimes('2026-11-22t06:00:00z', '2026-11-22T06:00:00+00:00'), 0)
  assert.equal(compareTimes('not a time', '2026-11-22T06:00:00Z'), -1)
})
