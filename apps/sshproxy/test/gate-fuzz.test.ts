/**
 * Network-level fuzzing of the gate (in process): arbitrary, truncated and corrupted client
 * bytes in arbitrary fragments. The gate never crashes, never opens a backend connection for
 * them, and always closes cleanly (FIN, not a reset) by the handshake deadline at the latest.
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createLogger } from '@gatehouse/kit'
import { freePort, tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { loadServeConfig } from '../src/config.ts'
import { openStore, type Store } from '../src/db/index.ts'
import { buildServer, type Gate } from '../src/server.ts'
import { captureClientHello, type FakeBackend, fakeBackend } from './helpers.ts'

let backend: FakeBackend
let store: Store
let gate: Gate
let port: number
let hello: Buffer
const dir = tempDir('sshproxy-fuzz-')

before(async () => {
  hello = await captureClientHello('openssh')
  backend = await fakeBackend()
  port = await freePort()
  writeFileSync(join(dir.path, 'config.json'), '{}')
  const config = loadServeConfig({
    flags: {
      route: [`127.0.0.1:${port}=127.0.0.1:${backend.port}`],
      db: join(dir.path, 'gate.db'),
      config: join(dir.path, 'config.json'),
      'handshake-timeout': '300ms',
      'ip-burst': '100000',
    },
    env: {},
    fileExists: existsSync,
  })
  store = await openStore(config.dbPath)
  gate = await buildServer(config, { store, logger: createLogger({ name: 'sshproxy', level: 'silent' }) })
  await gate.start()
})

after(async () => {
  await gate?.stop(0)
  await store?.close()
  await backend?.close()
  dir.remove()
})

function send(chunks: Buffer[]): Promise<'end' | 'reset' | 'closed'> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1')
    let how: 'end' | 'reset' | 'closed' = 'closed'
    s.on('connect', () => {
      for (const c of chunks) s.write(c)
    })
    s.on('data', () => {})
    s.on('end', () => {
      how = 'end'
      s.end()
    })
    s.on('error', (e: NodeJS.ErrnoException) => {
      how = e.code === 'ECONNRESET' ? 'reset' : 'closed'
    })
    s.on('close', () => resolve(how))
  })
}

function split(buf: Buffer, points: number[]): Buffer[] {
  const cuts = [...new Set(points.map((p) => p % (buf.length + 1)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let at = 0
  for (const p of [...cuts, buf.length]) {
    if (p > at) out.push(buf.subarray(at, p))
    at = p
  }
  return out
}

test('arbitrary client bytes in arbitrary fragments: clean close, no backend connection, gate alive', async () => {
  const input = fc.oneof(
    fc.uint8Array({ maxLength: 3000 }).map((b) => Buffer.from(b)),
    fc.nat().map((n) => hello.subarray(0, n % hello.length)),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }).map((edits) => {
      const b = Buffer.from(hello)
      // Keep the identification intact so the corruption reaches the packet parser.
      const start = b.indexOf(0x0a) + 1
      for (const [at, v] of edits) b[start + (at % (b.length - start))] = v
      return b
    }),
    fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.concat([Buffer.from('SSH-2.0-fuzz\r\n'), b])),
  )
  await fc.assert(
    fc.asyncProperty(input, fc.array(fc.nat(), { maxLength: 20 }), async (bytes, points) => {
      const how = await send(split(bytes, points))
      assert.equal(how, 'end', 'the gate closes with FIN')
    }),
    { numRuns: 60 },
  )
  assert.equal(backend.connections(), 1, 'only the startup probe reached the backend')
  // Still serving.
  assert.equal(await send([]), 'end')
})
