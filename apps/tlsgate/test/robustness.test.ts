/**
 * Hostile clients at the socket: non-TLS bytes, an oversized hello, a slowloris trickle and
 * arbitrary fragments of corrupted hellos. The gate refuses without contacting the backend,
 * closes by the hello deadline at the latest, and keeps serving.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, test } from 'node:test'
import fc from 'fast-check'
import { curlHello } from './capture.ts'
import { buildHello, CHROME_143, helloMessage, records } from './hello-builder.ts'
import { recordingBackend, startGate, type TestGate } from './helpers.ts'

let backend: Awaited<ReturnType<typeof recordingBackend>>
let g: TestGate
let hello: Buffer

before(async () => {
  hello = await curlHello()
  backend = await recordingBackend()
  g = await startGate(backend.port, { 'hello-timeout': '300ms', 'ip-burst': 100_000, 'ip-rate': 100_000 })
})
after(async () => {
  await g?.stop()
  await backend?.close()
})

async function open(): Promise<Socket> {
  const s = connect({ host: '127.0.0.1', port: g.port })
  s.on('error', () => {})
  await once(s, 'connect')
  return s
}

/** Resolves when the gate closes the connection. */
const closed = (s: Socket) => new Promise<void>((resolve) => s.once('close', () => resolve()))

test('non-TLS bytes are refused and the backend is not contacted', async () => {
  const before = backend.connections.length
  const s = await open()
  const done = closed(s)
  s.write('GET / HTTP/1.1\r\nHost: example.test\r\n\r\n')
  await done
  assert.equal(backend.connections.length, before)
  assert.equal(await g.metric('connection_results_total', { result: 'not_tls' }), 1)
})

test('a hello announcing more than 32 KiB is refused at once', async () => {
  const before = backend.connections.length
  const s = await open()
  const done = closed(s)
  s.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x01, 0x00, 0x00]))
  await done
  assert.equal(backend.connections.length, before)
  assert.ok((await g.metric('connection_results_total', { result: 'protocol_error' })) >= 1)
})

test('a hello cut into more than 512 tiny records, sent one record per write, is refused before the backend', async () => {
  const before = backend.connections.length
  const errorsBefore = await g.metric('connection_results_total', { result: 'protocol_error' })
  const message = helloMessage({
    ...CHROME_143,
    extensions: [...CHROME_143.extensions, ...Array.from({ length: 380 }, (_, i) => 0x7000 + i)],
  })
  const tiny = records(message, 2)
  const s = await open()
  const done = closed(s)
  s.setNoDelay(true)
  for (let at = 0; at < tiny.length && !s.destroyed; at += 7) s.write(tiny.subarray(at, at + 7))
  await done
  assert.equal(backend.connections.length, before)
  assert.equal(await g.metric('connection_results_total', { result: 'protocol_error' }), errorsBefore + 1)
  assert.ok(g.logs.some((l) => l.includes('too_many_records')))
})

test('slowloris: a hello trickled byte by byte is cut at the hello deadline', async () => {
  const before = backend.connections.length
  const s = await open()
  let sent = 0
  const timer = setInterval(() => {
    if (sent < hello.length && !s.destroyed) s.write(hello.subarray(sent, ++sent))
  }, 40)
  await closed(s)
  clearInterval(timer)
  assert.ok(sent < hello.length, 'closed before the hello was complete')
  assert.equal(backend.connections.length, before)
  assert.equal(await g.metric('connection_results_total', { result: 'hello_timeout' }), 1)
})

test('fuzz: corrupted hellos in arbitrary fragments never stop the gate', async () => {
  const seed = buildHello(CHROME_143)
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 6 }),
      async (flips, cuts) => {
        const bytes = Buffer.from(seed)
        for (const [at, v] of flips) bytes[at % bytes.length] = v
        const s = await open()
        const done = closed(s)
        let at = 0
        for (const n of cuts) {
          s.write(bytes.subarray(at, at + n))
          at += n
        }
        s.write(bytes.subarray(at))
        s.end()
        await done
      },
    ),
    { numRuns: 40 },
  )
  // Still serving: a real hello reaches the backend byte for byte.
  const count = backend.connections.length
  const s = await open()
  s.write(hello)
  while (backend.connections.length === count || backend.received(count).length < hello.length) {
    await new Promise((r) => setTimeout(r, 10))
  }
  assert.deepEqual(backend.received(count), hello)
  s.destroy()
})
