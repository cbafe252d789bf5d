import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { test } from 'node:test'
import {
  ensurePortFree,
  ensureUdpPortFree,
  StackError,
  setStackStopping,
  shownPath,
  supervise,
  waitHttp,
  waitSshBanner,
} from '../src/stack-ready.ts'

/** A TCP listener on a free loopback port; `onSocket` decides what it does with connections. */
async function listen(onSocket: (s: Socket) => void): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = []
  const server = createServer((s) => {
    sockets.push(s)
    onSocket(s)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return { server, port: (server.address() as { port: number }).port, sockets }
}

async function close(l: { server: Server; sockets: Socket[] }) {
  for (const s of l.sockets) s.destroy()
  await new Promise((r) => l.server.close(r))
}

test('a port in use is one line naming the app, the address and the cause', async (t) => {
  const l = await listen(() => {})
  t.after(() => close(l))
  const err = await ensurePortFree('edgegate', '127.0.0.1', l.port, 'HTTPS').catch((e: unknown) => e)
  assert.ok(err instanceof StackError)
  assert.equal(
    err.message,
    `edgegate: HTTPS port 127.0.0.1:${l.port} is already in use by another process (a stack still running, or another service)`,
  )
})

test('a free port passes and is free again afterwards', async () => {
  const l = await listen(() => {})
  const port = l.port
  await close(l)
  await ensurePortFree('notify', '127.0.0.1', port, 'HTTP')
  await ensurePortFree('notify', '127.0.0.1', port, 'HTTP')
})

test('a UDP port in use is refused too', async (t) => {
  const s = createSocket('udp4')
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r))
  t.after(() => s.close())
  const err = await ensureUdpPortFree('dnsctl', '127.0.0.1', s.address().port, 'DNS').catch((e: unknown) => e)
  assert.ok(err instanceof StackError)
  assert.match(err.message, /^dnsctl: DNS UDP port 127\.0\.0\.1:\d+ is already in use/)
})

test('a dependency that accepts but never answers HTTP is named with the cause when the wait ends', async (t) => {
  const l = await listen(() => {}) // accepts, reads nothing, never answers
  t.after(() => close(l))
  const err = await waitHttp({ app: 'artsvc', url: `http://127.0.0.1:${l.port}/readyz`, timeoutMs: 600 }).catch(
    (e: unknown) => e,
  )
  assert.ok(err instanceof StackError)
  assert.match(
    err.message,
    new RegExp(
      `^artsvc: 127\\.0\\.0\\.1:${l.port} was not ready within 0\\.6 s: accepted the connection but did not answer`,
    ),
  )
})

test('waitHttp reports a refused connection and a wrong status as the cause', async (t) => {
  const l = await listen(() => {})
  const port = l.port
  await close(l)
  const refused = await waitHttp({ app: 'notify', url: `http://127.0.0.1:${port}/readyz`, timeoutMs: 300 }).catch(
    (e: unknown) => e as Error,
  )
  assert.match((refused as Error).message, /refused the connection \(not listening\)/)
  const server = createHttpServer((_req, res) => res.writeHead(503).end())
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => new Promise((r) => server.close(r)))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/readyz`
  const unready = await waitHttp({ app: 'notify', url, timeoutMs: 300, logFile: '/x/notify.log' }).catch(
    (e: unknown) => e as Error,
  )
  assert.match((unready as Error).message, /answered \/readyz with HTTP 503; see \/x\/notify\.log$/)
})

test('waitHttp returns once the service answers a ready status', async (t) => {
  const server = createHttpServer((_req, res) => res.writeHead(204).end())
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => new Promise((r) => server.close(r)))
  await waitHttp({ app: 'x', url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, timeoutMs: 5000 })
})

test('waitHttp ends at once when the app exits, saying so', async () => {
  const child = spawn(process.execPath, ['-e', 'process.exit(3)'])
  await new Promise((r) => child.once('exit', r))
  const err = await waitHttp({ app: 'edgegate', url: 'http://127.0.0.1:9/', timeoutMs: 60_000, child }).catch(
    (e: unknown) => e as Error,
  )
  assert.equal((err as Error).message, 'edgegate: exited during startup (code 3)')
})

test('supervise: a child killed by a signal is named once, and stop() returns at once instead of waiting forever', async () => {
  const said: string[] = []
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'])
  const running = supervise(child, { what: 'notify', log: (l) => said.push(l), logFile: '/tmp/notify.log' })
  running.ready()
  const gone = new Promise((r) => child.once('exit', r))
  child.kill('SIGKILL')
  await gone
  assert.deepEqual(said, ['notify was killed by SIGKILL while the stack ran; see /tmp/notify.log'])
  // The old stop() waited for an 'exit' that had already happened: Ctrl-C hung.
  assert.equal(child.exitCode, null)
  await running.stop()
  assert.equal(said.length, 1)
})

test('supervise: startup exits and stop() itself are not news; a child ignoring SIGTERM is killed after the grace', async () => {
  const said: string[] = []
  const early = spawn(process.execPath, ['-e', 'process.exit(4)'])
  const first = supervise(early, { what: 'early', log: (l) => said.push(l) })
  await new Promise((r) => early.once('exit', r))
  first.ready()
  await first.stop()
  const stubborn = spawn(process.execPath, [
    '-e',
    "process.on('SIGTERM', () => {}); process.stdout.write('up'); setInterval(() => {}, 1000)",
  ])
  await new Promise((r) => stubborn.stdout.once('data', r))
  const second = supervise(stubborn, { what: 'stubborn', log: (l) => said.push(l), graceMs: 200 })
  second.ready()
  await second.stop()
  assert.equal(stubborn.signalCode, 'SIGKILL')
  assert.equal(said.length, 0)
  const crash = spawn(process.execPath, ['-e', 'setTimeout(() => process.exit(7), 50)'])
  const third = supervise(crash, { what: 'crash', log: (l) => said.push(l) })
  third.ready()
  await new Promise((r) => crash.once('exit', r))
  assert.deepEqual(said, ['crash exited with code 7 while the stack ran'])
})

test('supervise: once the stack is stopping, a child that exits on the Ctrl-C it got too is not news', async (t) => {
  t.after(() => setStackStopping(false))
  const said: string[] = []
  const child = spawn(process.execPath, ['-e', "process.stdout.write('up'); setInterval(() => {}, 1000)"])
  await new Promise((r) => child.stdout.once('data', r))
  const running = supervise(child, { what: 'tlsgate', log: (l) => said.push(l) })
  running.ready()
  setStackStopping()
  child.kill('SIGINT')
  await new Promise((r) => child.once('exit', r))
  await running.stop()
  assert.deepEqual(said, [])
})

test('an SSH backend must send its identification: silence and non-SSH greetings are named', async (t) => {
  const silent = await listen(() => {})
  t.after(() => close(silent))
  await assert.rejects(waitSshBanner('sshproxy', '127.0.0.1', silent.port, 400), {
    message: new RegExp(
      `^sshproxy: 127\\.0\\.0\\.1:${silent.port} was not ready within 0\\.4 s: accepted the connection but sent no SSH identification`,
    ),
  })
  const http = await listen((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'))
  t.after(() => close(http))
  await assert.rejects(waitSshBanner('sshproxy', '127.0.0.1', http.port, 300), /answered with something other than SSH/)
  const ssh = await listen((s) => s.write('SSH-2.0-OpenSSH_9.2\r\n'))
  t.after(() => close(ssh))
  await waitSshBanner('sshproxy', '127.0.0.1', ssh.port, 5000)
})

test('shownPath prints paths inside the repository relative to it', () => {
  assert.equal(shownPath('/repo', '/repo/.gatehouse/a.db'), '.gatehouse/a.db')
  assert.equal(shownPath('/repo', '/tmp/h/a.db'), '/tmp/h/a.db')
  assert.equal(shownPath('/repo', '/repository/a.db'), '/repository/a.db')
})
