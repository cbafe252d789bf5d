/**
 * The backend side: refused connections, bytes forwarded intact (Dropbear's guessed packet
 * behind its KEXINIT), and draining open sessions on SIGTERM.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { before, describe, test } from 'node:test'
import { freePort } from '@gatehouse/testkit'
import { captureClientHello, fakeBackend, metric, rawClient, startGate, waitFor } from './helpers.ts'

let dropbearHello: Buffer
before(async () => {
  dropbearHello = await captureClientHello('dropbear')
})

describe('backend', () => {
  test('a refused backend is logged as BACKEND … connection refused and the client is closed', async (t) => {
    const port = await freePort()
    const gate = await startGate(port)
    t.after(() => gate.stop())
    // The log is read from the gate's output stream: wait for the line rather than racing it.
    await waitFor('startup probe logged', () =>
      new RegExp(`BACKEND 127\\.0\\.0\\.1:${port} connection refused \\(startup probe\\)`).test(gate.log()),
    )
    const r = await rawClient(gate.port)
    assert.equal(r.identification, '')
    await waitFor(
      'backend_error counted',
      async () => metric(await gate.metrics(), 'sshproxy_connection_results_total', { result: 'backend_error' }) === 1,
    )
    await waitFor('refusal logged', () =>
      new RegExp(`"msg":"BACKEND 127\\.0\\.0\\.1:${port} connection refused"`).test(gate.log()),
    )
  })

  test('an allowed client that finds the backend gone after the probe: BACKEND … connection refused', async (t) => {
    const backend = await fakeBackend()
    const gate = await startGate(backend.port, ['--allow-unknown'])
    t.after(() => gate.stop())
    await backend.close()
    const r = await rawClient(gate.port, dropbearHello)
    assert.equal(r.identification, 'SSH-2.0-OpenSSH_9.9 gatehouse-fake')
    await waitFor('refused logged', () =>
      new RegExp(`"msg":"BACKEND 127\\.0\\.0\\.1:${backend.port} connection refused"`).test(gate.log()),
    )
  })

  test('the client identification, KEXINIT and the guessed packet after it reach the backend byte for byte', async (t) => {
    const backend = await fakeBackend()
    t.after(() => backend.close())
    const gate = await startGate(backend.port, ['--allow-unknown'])
    t.after(() => gate.stop())
    const r = await rawClient(gate.port, (socket) => {
      // Arbitrary fragmentation on the way in must not matter.
      for (let i = 0; i < dropbearHello.length; i += 97) socket.write(dropbearHello.subarray(i, i + 97))
      socket.once('data', () => socket.end())
    })
    assert.match(r.identification, /gatehouse-fake/)
    const got = await waitFor('backend received the hello', () => backend.received().find((b) => b.length > 0))
    assert.ok(got.equals(dropbearHello), `backend got ${got.length} bytes, expected ${dropbearHello.length}`)
  })

  test('16 MiB of random bytes both ways arrive intact while the client reads slowly', async (t) => {
    // Echoed by the backend: the client's bytes go up through the stream path and come back
    // down through the gate's reused read buffers, with the client pausing now and then so
    // the gate's writes queue and it has to stop reading the backend.
    const backend = await fakeBackend()
    t.after(() => backend.close())
    const gate = await startGate(backend.port, ['--allow-unknown'])
    t.after(() => gate.stop())
    const payload = randomBytes(16 * 1024 * 1024)
    const received: Buffer[] = []
    let total = 0
    let identification = ''
    await new Promise<void>((resolve, reject) => {
      const socket = connect(gate.port, '127.0.0.1')
      socket.on('error', reject)
      let chunks = 0
      socket.on('data', (d: Buffer) => {
        received.push(d)
        total += d.length
        if (!identification) {
          const all = Buffer.concat(received)
          const lf = all.indexOf(0x0a)
          if (lf === -1) return
          identification = all.subarray(0, lf + 1).toString('latin1')
          socket.write(dropbearHello)
          for (let i = 0; i < payload.length; i += 60_000) socket.write(payload.subarray(i, i + 60_000))
        }
        if (++chunks % 8 === 0) {
          socket.pause()
          setTimeout(() => socket.resume(), 5)
        }
        if (total >= identification.length + dropbearHello.length + payload.length) {
          socket.destroy()
          resolve()
        }
      })
    })
    const expected = Buffer.concat([Buffer.from(identification, 'latin1'), dropbearHello, payload])
    const got = Buffer.concat(received)
    assert.equal(got.length, expected.length)
    assert.ok(got.equals(expected), 'the echoed bytes differ from the bytes sent')
    assert.match(identification, /gatehouse-fake/)
  })

  test('a backend that never sends an identification: BACKEND … timed out, client closed', async (t) => {
    const { createServer } = await import('node:net')
    const silent = createServer((s) => s.on('error', () => {}))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    t.after(() => silent.close())
    const port = (silent.address() as { port: number }).port
    const gate = await startGate(port, ['--backend-timeout', '300ms'])
    t.after(() => gate.stop())
    // The startup probe runs beside the listener: its line may follow the ready line.
    await waitFor('the startup probe logged', () =>
      new RegExp(`BACKEND 127\\.0\\.0\\.1:${port} timed out \\(startup probe\\)`).test(gate.log()),
    )
    const r = await rawClient(gate.port)
    assert.equal(r.identification, '')
    await waitFor('timeout logged for the client', () =>
      new RegExp(`"msg":"BACKEND 127\\.0\\.0\\.1:${port} timed out"`).test(gate.log()),
    )
  })

  test('an idle relayed session is closed after --idle-timeout', async (t) => {
    const backend = await fakeBackend()
    t.after(() => backend.close())
    const gate = await startGate(backend.port, ['--allow-unknown', '--idle-timeout', '500ms'])
    t.after(() => gate.stop())
    const r = await rawClient(gate.port, dropbearHello)
    assert.match(r.identification, /gatehouse-fake/)
    assert.ok(r.received.length > dropbearHello.length, 'the relay echoed the hello before going idle')
    await waitFor('idle close logged', () => /closing idle session/.test(gate.log()))
  })

  test('SIGTERM stops accepting, lets an open session continue, then exits after the drain timeout', async (t) => {
    const backend = await fakeBackend()
    t.after(() => backend.close())
    const gate = await startGate(backend.port, ['--allow-unknown', '--drain-timeout', '2s'])
    let closedBy: string | undefined
    const session = connect(gate.port, '127.0.0.1')
    let echoed = Buffer.alloc(0)
    session.on('data', (d: Buffer) => {
      echoed = Buffer.concat([echoed, d])
    })
    session.on('close', () => {
      closedBy ??= 'gate'
    })
    await waitFor('identification', () => echoed.includes(0x0a))
    session.write(dropbearHello)
    await waitFor('relayed echo', () => echoed.length >= dropbearHello.length)
    const exited = new Promise<number | null>((r) => gate.child.process.once('exit', (code) => r(code)))
    gate.child.process.kill('SIGTERM')
    await waitFor('stopped accepting', () => /stopping: no new connections/.test(gate.log()))
    const refused = await new Promise<string>((r) => {
      const s = connect(gate.port, '127.0.0.1')
      s.on('error', (e: NodeJS.ErrnoException) => r(e.code ?? 'error'))
      s.on('connect', () => {
        s.destroy()
        r('connected')
      })
    })
    assert.equal(refused, 'ECONNREFUSED')
    const before = echoed.length
    session.write('still-open')
    await waitFor('session still relays during the drain', () => echoed.length >= before + 10)
    assert.equal(await exited, 0)
    await waitFor('session closed by the drain', () => closedBy === 'gate')
    await gate.stop()
  })
})
