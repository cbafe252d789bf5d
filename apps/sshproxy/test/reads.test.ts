/**
 * ReusedReads: reads land in one reused buffer unless the sink keeps a chunk, which moves
 * the next read to a fresh buffer; returning false pauses the socket.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { test } from 'node:test'
import { ReusedReads } from '../src/gate/reads.ts'

/** A server that sends `payload` in 1 KiB pieces, pausing between them so reads stay small. */
async function trickle(payload: Buffer): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => {
    s.on('error', () => {})
    let i = 0
    const pump = () => {
      if (i >= payload.length) return void s.end()
      s.write(payload.subarray(i, i + 1024))
      i += 1024
      setTimeout(pump, 0)
    }
    pump()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { server, port: (server.address() as { port: number }).port }
}

function readAll(port: number, reads: ReusedReads, onSocket: (s: Socket) => void = () => {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', onread: reads.onread })
    onSocket(socket)
    socket.on('error', reject)
    socket.on('end', () => resolve())
    socket.resume()
  })
}

test('kept chunks (retain) keep their bytes; chunks that are not kept share one buffer', async (t) => {
  const payload = randomBytes(256 * 1024)
  const { server, port } = await trickle(payload)
  t.after(() => server.close())

  const kept: Buffer[] = []
  const retaining = new ReusedReads((chunk) => {
    kept.push(chunk)
    retaining.retain()
    return true
  })
  await readAll(port, retaining)
  assert.ok(kept.length > 10, `expected many small reads, got ${kept.length}`)
  assert.ok(Buffer.concat(kept).equals(payload), 'a retained chunk was overwritten')
  assert.equal(new Set(kept.map((c) => c.buffer)).size, kept.length, 'every retained chunk has its own buffer')

  const copies: Buffer[] = []
  const buffers = new Set<ArrayBufferLike>()
  const reusing = new ReusedReads((chunk) => {
    copies.push(Buffer.from(chunk))
    buffers.add(chunk.buffer)
    return true
  })
  await readAll(port, reusing)
  assert.ok(Buffer.concat(copies).equals(payload))
  // Growth replaces the buffer a few times (8 KiB up to 128 KiB), never once per read.
  assert.ok(buffers.size <= 5, `${buffers.size} buffers for ${copies.length} reads`)
  assert.ok(copies.length > buffers.size * 2)
})

test('returning false pauses the socket until resume()', async (t) => {
  const payload = randomBytes(64 * 1024)
  const { server, port } = await trickle(payload)
  t.after(() => server.close())
  const got: Buffer[] = []
  let socket: Socket | undefined
  let paused = 0
  const reads = new ReusedReads((chunk) => {
    got.push(Buffer.from(chunk))
    paused++
    setTimeout(() => socket?.resume(), 5)
    return false
  })
  await readAll(port, reads, (s) => {
    socket = s
  })
  assert.ok(Buffer.concat(got).equals(payload))
  assert.equal(paused, got.length)
})
