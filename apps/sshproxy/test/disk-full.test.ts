/**
 * The gate's disk fills up (its database on a small tmpfs): connections are still gated as
 * before, the observations no write could store are kept, and once space is freed every
 * connection is counted: none lost, none twice. A disk error instead (ext4 turns the disk
 * read-only for good): gated as before, the failure logged once, and what is held at shutdown
 * logged with its number; the store commands that only read still work.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { mountFailingDisk, mountSmallDisk } from '@gatehouse/testkit'
import {
  captureClientHello,
  cli,
  fakeBackend,
  helloVariant,
  rawClient,
  readEntries,
  startGate,
  waitFor,
} from './helpers.ts'

const KEPT = 'storing observations failed; they are kept and written once the database is available'

/** A gate (and the backend it protects) whose database is on `disk`, and an OpenSSH hello to vary; all removed after the test. */
async function gateOnDisk(t: TestContext, disk: { path: string; remove(): void }) {
  t.after(() => disk.remove())
  const backend = await fakeBackend()
  t.after(() => backend.close())
  const gate = await startGate(backend.port, ['--ip-burst', '100000'], join(disk.path, 'sshproxy.db'))
  t.after(() => gate.stop())
  return { backend, gate, hello: await captureClientHello('openssh') }
}

test('a full disk: connections are gated as before and every one is counted once space is freed', async (t) => {
  const disk = mountSmallDisk('sshproxy-full-', 4)
  const { backend, gate, hello } = await gateOnDisk(t, disk)
  let made = 0
  // Each variant a new fingerprint: a new row, which needs space the full disk does not have.
  const connect = async (variant: string) => {
    const r = await rawClient(gate.port, helloVariant(hello, variant))
    made++
    return r
  }
  for (let i = 0; i < 3; i++) await connect('before')
  await waitFor('the first connections stored', async () => (await readEntries(gate.dbPath))[0]?.count === 3)

  disk.fill()
  // SQLite may still find room in its write-ahead log for a while: connect until a write fails.
  let round = 0
  await waitFor(
    'a write failed for the full disk',
    async () => {
      round++
      for (let i = 0; i < 10; i++) await connect(`full-${round}-${i}`)
      return gate.log().includes(KEPT)
    },
    60_000,
  )
  assert.match(gate.log(), /"reason":"database or disk is full"/)
  // Refused before the backend as usual: unknown and not let through.
  const during = await connect('during')
  assert.match(during.identification, /^SSH-2\.0-/)
  assert.equal(backend.connections(), 1, 'only the startup probe reached the backend')
  for (let i = 0; i < 5; i++) await connect('during')

  disk.free()
  await waitFor('writes succeed again', () => gate.log().includes('storing observations again'))
  const entries = await readEntries(gate.dbPath)
  assert.equal(
    entries.reduce((n, e) => n + e.count, 0),
    made,
  )
  const variant = (e: (typeof entries)[number]) =>
    (e.metadata as { kex_algorithms?: string }).kex_algorithms?.split(',').at(-1)
  assert.deepEqual(
    entries.filter((e) => variant(e) === 'during@gatehouse.test').map((e) => [e.count, e.verdict]),
    [[6, 'pending']],
  )
  assert.match(gate.log(), /"notRecorded":0/)
})

test('a disk error: connections are gated as before, the failure is logged once, and the unwritten are counted at shutdown', async (t) => {
  const disk = mountFailingDisk('sshproxy-failing-')
  const { backend, gate, hello } = await gateOnDisk(t, disk)
  for (let i = 0; i < 3; i++) await rawClient(gate.port, helloVariant(hello, 'before'))
  await waitFor('the first connections stored', async () => (await readEntries(gate.dbPath))[0]?.count === 3)

  disk.fail()
  for (let i = 0; i < 4; i++) {
    const r = await rawClient(gate.port, helloVariant(hello, `after-${i % 2}`))
    assert.match(r.identification, /^SSH-2\.0-/)
  }
  await waitFor('a write failed for the disk error', async () => gate.log().includes(KEPT))
  assert.match(gate.log(), /"reason":"disk I\/O error"/)
  // Three more flush intervals (500 ms each) fail too, and say nothing more.
  await new Promise((r) => setTimeout(r, 1600))
  const during = await rawClient(gate.port, helloVariant(hello, 'after-0'))
  assert.match(during.identification, /^SSH-2\.0-/)
  assert.equal(backend.connections(), 1, 'only the startup probe reached the backend')
  // On the dashboard: writes failing and two fingerprints held unwritten.
  const metrics = await gate.metrics()
  assert.match(metrics, /^sshproxy_observations_unwritten 2$/m)
  assert.match(metrics, /^sshproxy_observation_writes_total\{result="failed"\} [1-9]/m)
  // The operator's commands: a list still reads the store; a decision is refused with the reason.
  const listed = await cli(['list', '--json', '--db', gate.dbPath])
  assert.equal(listed.code, 0, listed.stderr)
  const [entry] = JSON.parse(listed.stdout)
  assert.equal(entry.count, 3)
  const approved = await cli(['approve', '--db', gate.dbPath, entry.fingerprint])
  assert.notEqual(approved.code, 0)
  assert.match(approved.stderr, /cannot be opened: EROFS: read-only file system/)
  await gate.child.stop()
  const log = gate.log()
  assert.equal(log.split(KEPT).length - 1, 1, log)
  assert.match(log, /"fingerprints":2,"connections":5,"msg":"observations not stored at shutdown/)
})
