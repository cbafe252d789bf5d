/**
 * A server under a low open-file limit: an HTTP app holds at most three quarters of it in
 * connections, refuses the rest itself (logged and counted) and keeps descriptors for its own
 * work; the limit as read from /proc/self/limits.
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, metric, startChild, tempDir, waitFor } from '@gatehouse/testkit'
import { openFileLimit } from '../src/open-files.ts'

test('the open-file limit is read from /proc/self/limits', () => {
  const limit = openFileLimit()
  assert.ok(limit !== undefined && limit > 0, 'read on Linux')
  const table =
    'Limit                     Soft Limit           Hard Limit           Units     \n' +
    'Max open files            1024                 524288               files     \n'
  assert.equal(
    openFileLimit(() => table),
    1024,
  )
  assert.equal(
    openFileLimit(() => 'Max open files            unlimited  unlimited  files\n'),
    undefined,
  )
  assert.equal(
    openFileLimit(() => {
      throw new Error('ENOENT')
    }),
    undefined,
  )
})

/** Open `n` connections at once; resolves with those still open after `settleMs`. */
async function hold(port: number, n: number, settleMs: number): Promise<Socket[]> {
  const sockets = Array.from({ length: n }, () => {
    const s = connect(port, '127.0.0.1')
    s.on('error', () => {})
    return s
  })
  await new Promise((r) => setTimeout(r, settleMs))
  return sockets.filter((s) => !s.destroyed && s.readyState === 'open')
}

// Past the limit itself the kernel refuses accept() and libuv closes waiting connections without
// telling Node; the app's own files and connections then fail with EMFILE too.
test('an HTTP app under a low open-file limit refuses connections past its bound, counts them, and keeps working', async (t) => {
  const port = await freePort()
  const dir = tempDir('kit-open-files-')
  t.after(() => dir.remove())
  const app = await startChild({
    name: 'http-app',
    command: 'prlimit',
    args: ['--nofile=256', process.execPath, join(import.meta.dirname, 'fixtures', 'http-app.ts'), String(port)],
    logFile: join(dir.path, 'app.log'),
    readyLine: /fixture ready/,
  })
  t.after(() => app.stop())
  // The logger writes asynchronously: the line may land after the ready line.
  await waitFor('the bound logged', () => /"max_connections":192,/.test(app.log()))
  const held = await hold(port, 300, 1000)
  assert.equal(held.length, 192, 'as many as the bound')
  await waitFor('the refusal logged', () =>
    /"max_connections":192,"refused":\d+,"msg":"connections refused: /.test(app.log()),
  )
  // A held connection is an ordinary one: a request on it that needs a descriptor of the app's own
  // is answered.
  const answer = await new Promise<string>((resolve) => {
    let text = ''
    held[0]!.on('data', (d) => {
      text += d
      if (text.includes('\r\n\r\n') && text.includes('}')) resolve(text)
    })
    held[0]!.write('GET /opens-a-file HTTP/1.1\r\nHost: x\r\n\r\n')
  })
  assert.match(answer, /^HTTP\/1\.1 200 /)
  for (const s of held) s.destroy()
  await waitFor('connections released', async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/metrics`)).ok
    } catch {
      return false
    }
  })
  const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  assert.equal(metric(m, 'fixture_http_connections_refused_total'), 300 - 192)
})
