import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { startChild, tempDir } from '../src/index.ts'

test('output written by a grandchild after the child stopped never raises "write after end"', async (t) => {
  const dir = tempDir('testkit-child-')
  t.after(() => dir.remove())
  const uncaught: Error[] = []
  const onUncaught = (err: Error) => uncaught.push(err)
  process.on('uncaughtException', onUncaught)
  t.after(() => process.off('uncaughtException', onUncaught))
  // As sshd's per-connection processes do: a background job keeps the child's stderr and keeps
  // writing to it while and after the child is stopped. Before the fix this failed every run.
  const child = await startChild({
    name: 'writer',
    command: '/bin/sh',
    args: ['-c', 'echo ready; (for i in $(seq 1 200000); do echo late >&2; done) & exec sleep 100'],
    logFile: join(dir.path, 'writer.log'),
    readyLine: /ready/,
  })
  await child.stop()
  await new Promise((r) => setTimeout(r, 300))
  assert.deepEqual(
    uncaught.map((e) => e.message),
    [],
  )
  assert.match(readFileSync(join(dir.path, 'writer.log'), 'utf8'), /^ready\n/)
})

test("the child's last lines, written as it exits, are in the log after stop()", async (t) => {
  const dir = tempDir('testkit-child-')
  t.after(() => dir.remove())
  const child = await startChild({
    name: 'farewell',
    command: '/bin/sh',
    // Many lines then the last one, written as the shell exits on SIGTERM.
    args: ['-c', "trap 'seq 1 50000 >&2; echo bye >&2; kill $!; exit 0' TERM; echo ready; sleep 100 & wait"],
    logFile: join(dir.path, 'farewell.log'),
    readyLine: /ready/,
  })
  await child.stop()
  assert.match(readFileSync(join(dir.path, 'farewell.log'), 'utf8'), /\nbye\n$/)
})

test('a child that exits during start-up is an error carrying the end of its output', async (t) => {
  const dir = tempDir('testkit-child-')
  t.after(() => dir.remove())
  await assert.rejects(
    startChild({
      name: 'quitter',
      command: '/bin/sh',
      args: ['-c', 'echo "cannot bind port 1" >&2; exit 3'],
      logFile: join(dir.path, 'quitter.log'),
      readyLine: /ready/,
    }),
    /quitter exited during startup \(code 3, signal null\):\ncannot bind port 1/,
  )
})
