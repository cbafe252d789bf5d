/**
 * ReusedReads: reads land in one reused buffer unless the sink keeps a chunk, which moves
 * the next read to a fresh buffer; returning false pauses the socket. readInto gives an
 * accepted socket the same reads after its first bytes came through the stream path.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { test } from 'node:test'
import { readFirstBytes } from '@gatehouse/kit/gate-handshake.ts'
import { readInto } from '@gatehouse/kit/reused-reads.ts'
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

test('an accepted socket switched to reused reads (readInto) loses no byte and reuses one buffer', async (t) => {
  const first = randomBytes(1000)
  const second = randomBytes(3000)
  const rest = randomBytes(256 * 1024)
  const chunks: Buffer[] = []
  const buffers = new Set<ArrayBufferLike>()
  let dataEvents = 0
  const done = new Promise<{ head: Buffer; pending: Buffer[] }>((resolve, reject) => {
    const server = createServer({ pauseOnConnect: true }, async (s) => {
      s.on('error', reject)
      const r = await readFirstBytes(s, 5000, (b) =>
        b.length >= 1000 ? { kind: 'done' } : { kind: 'more', need: 1000 },
      )
      if (r.kind !== 'parsed') return reject(new Error(r.kind))
      s.write('go')
      // The stream path keeps reading into its own queue while paused: the second message lands there.
      while (s.readableLength < second.length) await new Promise((r) => setTimeout(r, 5))
      const reads = new ReusedReads((chunk) => {
        chunks.push(Buffer.from(chunk))
        buffers.add(chunk.buffer)
        return true
      })
      const pending = readInto(s, reads)
      if (!pending) return reject(new Error('readInto found no onread state on this node'))
      s.on('data', () => dataEvents++)
      s.on('end', () => resolve({ head: r.buffer, pending }))
      s.resume()
    })
    server.listen(0, '127.0.0.1', () => {
      const c = connect({ port: (server.address() as { port: number }).port, host: '127.0.0.1' })
      t.after(() => {
        c.destroy()
        server.close()
      })
      c.on('error', reject)
      c.write(first)
      c.once('data', async () => {
        c.write(second)
        await new Promise((r) => setTimeout(r, 50))
        for (let i = 0; i < rest.length; i += 1024) {
          c.write(rest.subarray(i, i + 1024))
          await new Promise((r) => setImmediate(r))
        }
        c.end()
      })
    })
  })
  const { head, pending } = await done
  assert.ok(head.equals(first))
  assert.ok(Buffer.concat(pending).equals(second), 'the bytes the stream path had queued come back first')
  assert.ok(Buffer.concat(chunks).equals(rest))
  assert.equal(dataEvents, 0, 'after readInto the bytes go to the sink, not to data events')
  assert.ok(chunks.length > 10, `expected many reads, got ${chunks.length}`)
  assert.ok(buffers.size <= 5, `${buffers.size} buffers for ${chunks.length} reads`)
})
