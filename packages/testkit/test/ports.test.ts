/**
 * freePort's machine-wide reservations: a port reserved by a running process goes to no other
 * process, a reservation outlives nothing (released at exit, ignored once its process was
 * killed), and parallel processes never get one port twice.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { test } from 'node:test'
import { reservePort } from '../src/env.ts'

const ENV = join(import.meta.dirname, '..', 'src', 'env.ts')

/** A node process running `body` (with `reservePort` and `freePort` in scope), its first stdout line parsed. */
async function child(body: string) {
  const script = `import { reservePort, freePort } from ${JSON.stringify(ENV)}\n${body}`
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  proc.stdout.setEncoding('utf8')
  const line = new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (chunk: string) => {
      out += chunk
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')))
    })
    proc.once('exit', (code) => reject(new Error(`child exited (${code}) before answering: ${out}`)))
  })
  return { proc, answer: JSON.parse(await line) as unknown }
}

// Ports 1–3 are below the range freePort hands out, so parallel suites never meet these reservations.
test('a port reserved by a running process is refused; once it is killed, it is free again', async () => {
  const { proc, answer } = await child(`console.log(JSON.stringify(reservePort(1))); setInterval(() => {}, 1000)`)
  assert.equal(answer, true)
  assert.equal(reservePort(1), false)
  proc.kill('SIGKILL')
  await once(proc, 'exit')
  assert.equal(reservePort(1), true)
})

test('a process releases its reservations when it exits', async () => {
  const { proc, answer } = await child(
    `console.log(JSON.stringify(reservePort(2))); process.stdin.on('end', () => process.exit(0)); process.stdin.resume()`,
  )
  assert.equal(answer, true)
  assert.equal(reservePort(2), false)
  proc.stdin!.end()
  await once(proc, 'exit')
  // A live pid of this test, not the child's, would otherwise be in the way: the file is gone.
  assert.equal(reservePort(2), true)
  assert.equal(reservePort(3), true)
})

test('parallel processes taking many ports never get the same one', async () => {
  const take = `const ports = []; for (let i = 0; i < 150; i++) ports.push(await freePort()); console.log(JSON.stringify(ports)); process.stdin.on('end', () => process.exit(0)); process.stdin.resume()`
  const children = await Promise.all([0, 1, 2, 3].map(() => child(take)))
  try {
    const all = children.flatMap((c) => c.answer as number[])
    assert.equal(all.length, 600)
    assert.equal(new Set(all).size, all.length)
  } finally {
    for (const c of children) c.proc.stdin!.end()
    await Promise.all(children.map((c) => once(c.proc, 'exit')))
  }
})
