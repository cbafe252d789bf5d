import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, describe, test } from 'node:test'
import { buildSpliceRelay } from '../scripts/build-splice-relay.ts'
import { createLogger } from '../src/logger.ts'
import { createMetrics } from '../src/metrics.ts'
import { pipeReads, ReusedReads, readInto } from '../src/reused-reads.ts'
import { describeSplice, findSpliceHelper, HELPER_NICE, SPLICE_HELPER_PATH, SpliceRelays } from '../src/splice-relay.ts'

// The helper is built by npm's postinstall; a checkout that has not run it builds it here, into
// a directory of its own so the test never races an install.
const built = mkdtempSync(join(tmpdir(), 'splice-relay-'))
after(() => rmSync(built, { recursive: true, force: true }))
const helperPath = join(built, 'splice-relay')
const buildError = buildSpliceRelay(helperPath)

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

interface Gate {
  port: number
  relays: SpliceRelays
  /** The gate's sockets of each accepted connection: [client side, backend side]. */
  sockets: [Socket, Socket][]
  counted: { up: number; down: number }
  idle: number
  logs: string[]
  metricsText: () => Promise<string>
  close(): void
}

/** A gate like sshproxy's and tlsgate's relays: reused reads both ways, watched by `relays`. */
async function startGate(backendPort: number, o: { helper: string | undefined; afterBytes: number; idleMs?: number }) {
  const logStream = new PassThrough()
  const logs: string[] = []
  logStream.on('data', (d: Buffer) => logs.push(d.toString()))
  const metrics = createMetrics('gatetest')
  const relays = new SpliceRelays({
    helper: o.helper,
    afterBytes: o.afterBytes,
    max: 8,
    logger: createLogger({ name: 'gatetest', destination: logStream }),
    metrics,
  })
  const gate: Gate = {
    port: 0,
    relays,
    sockets: [],
    counted: { up: 0, down: 0 },
    idle: 0,
    logs,
    metricsText: () => metrics.registry.metrics(),
    close: () => server.close(),
  }
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    const backendReads = new ReusedReads(() => false)
    const backend = connect({ port: backendPort, host: '127.0.0.1', onread: backendReads.onread }, () => {
      const clientReads = new ReusedReads(() => false)
      const buffered = readInto(client, clientReads)
      assert.ok(buffered, 'this node keeps the onread state where the kit expects it')
      const moved = relays.watch({
        client,
        backend,
        clientReads,
        backendReads,
        idleMs: o.idleMs ?? 0,
        counted: (up, down) => {
          gate.counted.up += up
          gate.counted.down += down
        },
        idle: () => gate.idle++,
      })
      pipeReads(backendReads, backend, client, moved)
      for (const chunk of buffered) backend.write(chunk)
      pipeReads(clientReads, client, backend, moved)
      client.resume()
      backend.resume()
    })
    gate.sockets.push([client, backend])
    client.on('error', () => backend.destroy())
    backend.on('error', () => client.destroy())
    client.on('close', () => backend.destroySoon())
    backend.on('close', () => client.destroySoon())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  gate.port = (server.address() as AddressInfo).port
  return gate
}

/** Collects a socket's bytes until it ends. */
function collect(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = []
  socket.on('data', (d: Buffer) => chunks.push(d))
  return new Promise((resolve, reject) => {
    socket.once('end', () => resolve(Buffer.concat(chunks)))
    socket.once('error', reject)
  })
}

/**
 * A backend that streams `down` to each client at once, reads the client's `upBytes`, then
 * answers with their hash and ends: both directions at the same time, and the end passed on.
 */
async function startBackend(down: Buffer, upBytes: number) {
  const server = createServer((s) => {
    s.write(down)
    const chunks: Buffer[] = []
    let got = 0
    s.on('data', (d: Buffer) => {
      chunks.push(d)
      got += d.length
      if (got === upBytes) s.end(`\n${sha(Buffer.concat(chunks))}`)
    })
    s.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, port: (server.address() as AddressInfo).port }
}

/** One client through `gate` to a `startBackend(down, up.length)` backend: every byte both ways. */
async function assertExchange(gate: Gate, up: Buffer, down: Buffer) {
  const client = connect(gate.port, '127.0.0.1')
  const received = collect(client)
  client.write(up)
  const got = await received
  assert.equal(sha(got.subarray(0, down.length)), sha(down))
  assert.equal(got.subarray(down.length).toString(), `\n${sha(up)}`)
}

/** A backend that sends 1 MiB of `fill` to each client, then nothing, keeping the connection open. */
async function startQuietBackend(fill: number) {
  const sockets: Socket[] = []
  const server = createServer((s) => {
    sockets.push(s)
    s.write(Buffer.alloc(1024 * 1024, fill))
    s.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { server, sockets, port: (server.address() as AddressInfo).port }
}

/** A client of `gate` that reads everything, once its connection has gone to a helper. */
async function clientHandedOver(gate: Gate): Promise<Socket> {
  const client = connect(gate.port, '127.0.0.1')
  client.on('data', () => {})
  client.on('error', () => {})
  await waitFor('a helper', () => gate.relays.running === 1)
  return client
}

/** Niceness of a process (Linux /proc: field 19 of its stat line). */
const niceOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
}

/** This process's children whose command name is `name`. */
function childrenNamed(name: string): number[] {
  const pids = readdirSync('/proc/self/task').flatMap((task) =>
    readFileSync(`/proc/self/task/${task}/children`, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number),
  )
  return pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'latin1').trim() === name
    } catch {
      return false // exited meanwhile
    }
  })
}

const waitFor = async (what: string, check: () => boolean | Promise<boolean>, ms = 5000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('SpliceRelays', () => {
  test('the helper builds (bootstrap installs the C compiler)', () => {
    assert.equal(buildError, undefined)
  })

  // At the first chunk, mid-stream, and while writes are queued: the handover must not reorder.
  for (const afterBytes of [1, 65_537, 256 * 1024])
    test(`moves a long transfer to the helper after ${afterBytes} bytes, both ways at once, byte for byte, the end passed on`, async () => {
      const up = randomBytes(6 * 1024 * 1024)
      const down = randomBytes(5 * 1024 * 1024 + 7)
      const backend = await startBackend(down, up.length)
      const gate = await startGate(backend.port, { helper: helperPath, afterBytes })
      try {
        const client = connect(gate.port, '127.0.0.1')
        const received = collect(client)
        client.write(up)
        const got = await received
        assert.equal(got.length, down.length + 65, 'every byte of the backend, then its answer')
        assert.equal(sha(got.subarray(0, down.length)), sha(down))
        assert.equal(got.subarray(down.length).toString(), `\n${sha(up)}`)
        await waitFor('the helper to exit', () => gate.relays.running === 0)
        const text = await gate.metricsText()
        assert.match(text, /^gatetest_splice_handoffs_total 1$/m)
        assert.match(text, /^gatetest_splice_relays 0$/m)
        assert.match(text, /^gatetest_splice_helper_cpu_seconds_total \d/m)
        // The helper moved most of it; the gate moved the first 256 KiB or so in-process.
        assert.ok(gate.counted.up > up.length / 2 && gate.counted.up <= up.length, `up ${gate.counted.up}`)
        assert.ok(gate.counted.down > down.length / 2 && gate.counted.down <= down.length + 65)
        await waitFor('the gate to close its sockets', () => gate.sockets.every(([c, b]) => c.destroyed && b.destroyed))
      } finally {
        gate.close()
        backend.server.close()
      }
    })

  test('a short exchange stays in-process', async () => {
    const backend = await startBackend(Buffer.from('hello'), 4)
    const gate = await startGate(backend.port, { helper: helperPath, afterBytes: 1024 * 1024 })
    try {
      const client = connect(gate.port, '127.0.0.1')
      const received = collect(client)
      client.write('ping')
      assert.equal((await received).toString(), `hello\n${sha(Buffer.from('ping'))}`)
      assert.match(await gate.metricsText(), /^gatetest_splice_handoffs_total 0$/m)
    } finally {
      gate.close()
      backend.server.close()
    }
  })

  test('the helper closes an idle connection and the gate hears of it', async () => {
    const backend = await startQuietBackend(1)
    const gate = await startGate(backend.port, { helper: helperPath, afterBytes: 64 * 1024, idleMs: 300 })
    try {
      const client = await clientHandedOver(gate)
      await once(client, 'close')
      assert.equal(gate.idle, 1)
      await waitFor('the helper to exit', () => gate.relays.running === 0)
    } finally {
      gate.close()
      backend.server.close()
    }
  })

  test("the helper relays a step behind the programs at both ends: its niceness is the gate's plus HELPER_NICE", async () => {
    const backend = await startQuietBackend(3)
    const gate = await startGate(backend.port, { helper: helperPath, afterBytes: 64 * 1024 })
    try {
      await clientHandedOver(gate)
      const helpers = childrenNamed('splice-relay')
      assert.equal(helpers.length, 1, 'one helper process, a child of the gate')
      // The helper lowers its priority as it starts: wait for that rather than race it.
      await waitFor('the helper to renice itself', () => niceOf(helpers[0]!) !== niceOf(process.pid))
      assert.equal(niceOf(helpers[0]!), Math.min(19, niceOf(process.pid) + HELPER_NICE))
      gate.sockets[0]![0].destroy()
      await waitFor('the helper to exit', () => gate.relays.running === 0)
    } finally {
      gate.close()
      backend.server.close()
    }
  })

  test('destroying the gate side stops the helper (drain on shutdown)', async () => {
    const backend = await startQuietBackend(2)
    const gate = await startGate(backend.port, { helper: helperPath, afterBytes: 64 * 1024 })
    try {
      const client = await clientHandedOver(gate)
      gate.sockets[0]![0].destroy()
      await once(client, 'close')
      await waitFor('the helper to exit', () => gate.relays.running === 0)
      await waitFor('the backend to see the end', () => backend.sockets[0]!.closed || backend.sockets[0]!.readableEnded)
    } finally {
      gate.close()
      backend.server.close()
      for (const s of backend.sockets) s.destroy()
    }
  })

  test('a connection that closes while the handover waits for its queued writes starts no helper', async () => {
    const backend = await startBackend(Buffer.alloc(0), Number.POSITIVE_INFINITY)
    const gate = await startGate(backend.port, { helper: helperPath, afterBytes: 1 })
    try {
      const client = connect(gate.port, '127.0.0.1')
      client.on('error', () => {})
      client.pause() // reads nothing: what the gate writes to it stays queued
      await waitFor('the relay', () => gate.sockets.length === 1 && !gate.sockets[0]![1].connecting)
      const [gateClient] = gate.sockets[0]!
      gateClient.write(Buffer.alloc(32 * 1024 * 1024))
      assert.ok(gateClient.writableLength > 0)
      client.write('x') // the first byte relayed starts the handover, which waits for 'drain'
      await waitFor('the handover to begin', () => gate.relays.running === 1)
      client.destroy()
      await waitFor('the gate to close its sockets', () => gateClient.destroyed)
      await waitFor('the reserved helper slot to be freed', () => gate.relays.running === 0)
      assert.match(await gate.metricsText(), /^gatetest_splice_handoffs_total 0$/m)
    } finally {
      gate.close()
      backend.server.close()
    }
  })

  test('a helper that refuses its arguments (built from older sources) leaves this and later connections in-process, intact', async () => {
    // What a helper built before its arguments changed does: a usage line and status 3,
    // before it touches either socket.
    const stale = join(built, 'stale-helper')
    writeFileSync(stale, '#!/bin/sh\necho "usage: splice-relay IDLE_MS GRACE_MS" >&2\nexit 3\n', { mode: 0o755 })
    const up = randomBytes(2 * 1024 * 1024)
    const down = randomBytes(2 * 1024 * 1024)
    const backend = await startBackend(down, up.length)
    const gate = await startGate(backend.port, { helper: stale, afterBytes: 64 * 1024 })
    try {
      for (let i = 0; i < 2; i++) {
        await assertExchange(gate, up, down)
        assert.equal(gate.relays.running, 0)
      }
      assert.equal(gate.relays.enabled, false)
      const errors = gate.logs.filter((l) => l.includes('does not match this version'))
      assert.equal(errors.length, 1, gate.logs.join(''))
      assert.match(errors[0]!, /usage: splice-relay/)
      assert.match(await gate.metricsText(), /^gatetest_splice_handoffs_total 1$/m)
    } finally {
      gate.close()
      backend.server.close()
    }
  })

  test('a helper that cannot start leaves the connection in-process, intact', async () => {
    const up = randomBytes(2 * 1024 * 1024)
    const down = randomBytes(2 * 1024 * 1024)
    const backend = await startBackend(down, up.length)
    // A directory passes the executable check and fails at spawn (EACCES).
    const gate = await startGate(backend.port, { helper: built, afterBytes: 64 * 1024 })
    try {
      await assertExchange(gate, up, down)
      assert.equal(gate.relays.running, 0)
      assert.ok(
        gate.logs.some((l) => l.includes('splice relay helper did not start')),
        gate.logs.join(''),
      )
    } finally {
      gate.close()
      backend.server.close()
    }
  })
})

describe('splice relay settings', () => {
  test('without a helper, or with 0 bytes, nothing is watched', () => {
    const logger = createLogger({ name: 't', destination: new PassThrough() })
    assert.equal(new SpliceRelays({ helper: undefined, afterBytes: 1, max: 1, logger }).enabled, false)
    assert.equal(new SpliceRelays({ helper: '/bin/true', afterBytes: 0, max: 1, logger }).enabled, false)
    assert.equal(new SpliceRelays({ helper: '/bin/true', afterBytes: 1, max: 0, logger }).enabled, false)
  })

  test('findSpliceHelper answers only for an executable file', () => {
    assert.equal(findSpliceHelper(join(built, 'missing')), undefined)
    if (!buildError) assert.equal(findSpliceHelper(helperPath), helperPath)
  })

  test('the configuration line says what happens', () => {
    assert.match(describeSplice(undefined, helperPath), /off/)
    assert.match(describeSplice({ afterBytes: 0, max: 4 }, helperPath), /off/)
    assert.match(describeSplice({ afterBytes: 1024 * 1024, max: 4 }, undefined), /helper not built/)
    assert.equal(
      describeSplice({ afterBytes: 1024 * 1024, max: 4 }, helperPath),
      `splice relay: connections that relay 1 MiB move to ${helperPath}, up to 4 at once`,
    )
    assert.ok(SPLICE_HELPER_PATH.endsWith('packages/kit/native/build/splice-relay'))
  })
})
