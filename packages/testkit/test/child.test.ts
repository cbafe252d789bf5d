import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { startChild, tempDir } from '../src/index.ts'

/** A `/bin/sh -c script` child, ready when it prints "ready"; `log()` reads its log file. */
function shell(t: TestContext, name: string, script: string) {
  const dir = tempDir('testkit-child-')
  t.after(() => dir.remove())
  const logFile = join(dir.path, `${name}.log`)
  const start = () => startChild({ name, command: '/bin/sh', args: ['-c', script], logFile, readyLine: /ready/ })
  return { start, log: () => readFileSync(logFile, 'utf8') }
}

test('output written by a grandchild after the child stopped never raises "write after end"', async (t) => {
  const uncaught: Error[] = []
  const onUncaught = (err: Error) => uncaught.push(err)
  process.on('uncaughtException', onUncaught)
  t.after(() => process.off('uncaughtException', onUncaught))
  // As sshd's per-connection processes do: a background job keeps the child's stderr and keeps
  // writing to it while and after the child is stopped. Before the fix this failed about one
  // run in two.
  const writer = shell(t, 'writer', 'echo ready; (for i in $(seq 1 200000); do echo late >&2; done) & exec sleep 100')
  const child = await writer.start()
  await child.stop()
  await new Promise((r) => setTimeout(r, 300))
  assert.deepEqual(
    uncaught.map((e) => e.message),
    [],
  )
  assert.match(writer.log(), /^ready\n/)
})

test("the child's last lines, written as it exits, are in the log after stop()", async (t) => {
  // Many lines then the last one, written as the shell exits on SIGTERM.
  const farewell = shell(
    t,
    'farewell',
    "trap 'seq 1 50000 >&2; echo bye >&2; kill $!; exit 0' TERM; echo ready; sleep 100 & wait",
  )
  const child = await farewell.start()
  await child.stop()
  assert.match(farewell.log(), /\nbye\n$/)
})

test('a child that exits during start-up is an error carrying the end of its output', async (t) => {
  const quitter = shell(t, 'quitter', 'echo "cannot bind port 1" >&2; exit 3')
  await assert.rejects(quitter.start(), /quitter exited during startup \(code 3, signal null\):\ncannot bind port 1/)
})

test('log() holds every line received, the ready line included, as soon as it arrives', async (t) => {
  // The ready line comes after a burst bigger than a pipe's buffer, and a multi-byte character
  // ends it; log() is read at once, before the log file's asynchronous writes could catch up.
  const burst = shell(t, 'burst', "seq 1 20000; printf 'ready \\342\\234\\223\\n'; exec sleep 100")
  const child = await burst.start()
  t.after(() => child.stop())
  const seen = child.log()
  assert.match(seen, /^1\n2\n/)
  assert.match(seen, /\n20000\nready ✓\n$/)
})

test("the log file is open once start() resolves, however busy libuv's thread pool", async (t) => {
  // CI saw the file's asynchronous open run after the test had ended and removed its folder
  // (ENOENT raised outside the test). Here the pool's threads are all busy while the child starts.
  const uncaught: Error[] = []
  const onUncaught = (err: Error) => uncaught.push(err)
  process.on('uncaughtException', onUncaught)
  t.after(() => process.off('uncaughtException', onUncaught))
  const dir = tempDir('testkit-child-')
  const { pbkdf2 } = await import('node:crypto')
  const busy = Array.from(
    { length: 8 },
    () => new Promise((r) => pbkdf2('x', 'salt', 400_000, 32, 'sha256', () => r(undefined))),
  )
  const child = await startChild({
    name: 'early',
    command: '/bin/sh',
    args: ['-c', 'echo ready; exec sleep 100'],
    logFile: join(dir.path, 'early.log'),
    readyLine: /ready/,
  })
  dir.remove()
  await child.stop()
  await Promise.all(busy)
  await new Promise((r) => setImmediate(r))
  assert.deepEqual(
    uncaught.map((e) => e.message),
    [],
  )
  assert.equal(child.log(), 'ready\n')
})

test('stop() ends a paused (SIGSTOPped) child with its signal, not the SIGKILL that follows 10 s later', async (t) => {
  const paused = shell(t, 'paused', "trap 'echo terminated; exit 0' TERM; echo ready; while :; do sleep 0.1; done")
  const child = await paused.start()
  child.process.kill('SIGSTOP')
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.process.once('exit', (code, signal) => resolve([code, signal])),
  )
  await child.stop()
  // SIGKILL would leave signal 'SIGKILL' and no "terminated" line: the trap ran, so SIGTERM did.
  assert.deepEqual(await exit, [0, null])
  assert.match(paused.log(), /terminated/)
})
