/**
 * The gate's disk fails under it (ext4 turns read-only after a disk error, for good): clients
 * are gated as before, the failed write is logged once, the observations are kept, not dropped,
 * and what is still held at shutdown is logged with its number. The store commands that only
 * read still work; a decision is refused with the reason.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { mountFailingDisk } from '@gatehouse/testkit'
import { curlHello } from './capture.ts'
import { cli, recordingBackend, startGate, waitFor } from './helpers.ts'

const KEPT = 'storing observations failed; they are kept and written once the database is available'

test('a disk error: clients are gated as before, the failure is logged once, the unwritten are counted at shutdown', async (t) => {
  const disk = mountFailingDisk('tlsgate-failing-')
  t.after(() => disk.remove())
  const backend = await recordingBackend()
  t.after(() => backend.close())
  const g = await startGate(backend.port, {}, 'tls', join(disk.path, 'tlsgate.db'))
  let stopped = false
  t.after(async () => {
    if (!stopped) await g.stop()
  })
  const bytes = await curlHello()
  // One client: its ClientHello reaches the backend (an unknown client passes by default).
  const client = async () => {
    const before = backend.connections.length
    const socket = connect(g.port, '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write(bytes)
    await waitFor('the hello relayed', async () => backend.received(before).length >= bytes.length)
    socket.destroy()
  }

  await client()
  assert.equal((await g.seen())[0]!.count, 1)

  disk.fail()
  await client()
  await client()
  await g.gate.flush()
  await g.gate.flush()
  const log = () => g.logs.join('')
  assert.match(log(), /"reason":"disk I\/O error"/)
  assert.equal(log().split(KEPT).length - 1, 1, log())
  assert.equal(backend.connections.length, 3)
  // The operator's commands: a list still reads the store; a decision is refused with the reason.
  const db = join(disk.path, 'tlsgate.db')
  const listed = await cli(['list', '--json', '--db', db])
  assert.equal(listed.code, 0, listed.stderr)
  const [entry] = JSON.parse(listed.stdout)
  assert.equal(entry.count, 1)
  const blocked = await cli(['block', '--db', db, entry.fingerprint])
  assert.notEqual(blocked.code, 0)
  assert.match(blocked.stderr, /cannot be opened: EROFS: read-only file system/)

  stopped = true
  await g.stop()
  assert.match(log(), /"fingerprints":1,"connections":2,"msg":"observations not stored at shutdown/)
})
