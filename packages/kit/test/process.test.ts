import assert from 'node:assert/strict'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, describe, test } from 'node:test'
import { waitFor } from '@gatehouse/testkit'

const dir = mkdtempSync(join(tmpdir(), 'kit-process-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const kit = JSON.stringify(resolve(import.meta.dirname, '../src/index.ts'))

// A program whose stop() behaviour is chosen by STOP_MODE: ok | hang | fail.
const script = join(dir, 'main.ts')
writeFileSync(
  script,
  `import { runMain, StartupError } from ${kit}
const mode = process.env.STOP_MODE ?? 'ok'
await runMain({ name: 'demo', drainTimeoutMs: Number(process.env.DRAIN_MS ?? 30000) }, async () => {
  if (mode === 'startup') throw new StartupError(['listen: address in use', 'db: unreachable'])
  if (mode === 'bug') throw new TypeError('undefined is not a function')
  if (mode === 'port-taken') {
    const { createServer } = await import('node:net')
    const port = Number(process.env.PORT)
    // What a server's listen() rejects with when the port is taken.
    await new Promise((resolve, reject) => createServer().once('error', reject).listen(port, '127.0.0.1', () => resolve(undefined)))
  }
  if (mode === 'slow-start') {
    // Startup that takes a while (migrations): a signal now must still end in stop().
    process.stdout.write('starting\\n')
    // Startup ends when the test writes a line on stdin.
    await new Promise((r) => process.stdin.once('data', r))
    process.stdin.pause()
  }
  const keepAlive = setInterval(() => {}, 1 << 30)
  const stop = async () => {
    process.stdout.write('stopping\\n')
    if (mode === 'hang') return new Promise(() => {})
    if (mode === 'fail') throw new Error('flush failed')
    clearInterval(keepAlive)
    process.stdout.write('stopped\\n')
  }
  if (mode !== 'reload') return stop
  let reloads = 0
  // The second reload fails, as a renewal whose files are half written would.
  const reload = async () => {
    reloads++
    if (reloads === 2) throw new Error('key does not match')
    process.stdout.write(\`reloaded \${reloads}\\n\`)
  }
  return { stop, reload }
})
// runMain resolves once the signal handlers are installed.
if (process.env.SHOW_PID) process.stdout.write(\`pid \${process.pid}\\n\`)
process.stdout.write('ready\\n')
`,
)

interface Run {
  child: ChildProcessWithoutNullStreams
  stdout: () => string
  stderr: () => string
  /** Resolves once stdout holds this line. */
  line: (text: string) => Promise<void>
  exit: Promise<[number | null, NodeJS.Signals | null]>
}

function run(env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [script], { env: { PATH: process.env.PATH, ...env } })
  let out = ''
  let err = ''
  const waiters: Array<{ text: string; resolve: () => void }> = []
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString()
    for (const w of [...waiters]) {
      if (out.split('\n').includes(w.text)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve()
      }
    }
  })
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString()
  })
  const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    line: (text) =>
      out.split('\n').includes(text)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            waiters.push({ text, resolve })
            exit.then(() => reject(new Error(`exited before printing ${text}; stderr: ${err}`)))
          }),
    exit,
  }
}

describe('runMain', () => {
  test('a signal during startup stops once startup finishes', async () => {
    const r = run({ STOP_MODE: 'slow-start' })
    await r.line('starting')
    r.child.kill('SIGTERM')
    r.child.stdin.write('go\n')
    const [code, signal] = await r.exit
    assert.deepEqual({ code, signal, err: r.stderr() }, { code: 0, signal: null, err: '' })
    assert.match(r.stdout(), /stopping\nstopped\n/)
  })

  test('SIGTERM calls stop() and exits 0', async () => {
    const r = run()
    await r.line('ready')
    r.child.kill('SIGTERM')
    const [code] = await r.exit
    assert.equal(code, 0, r.stderr())
    assert.equal(r.stdout(), 'ready\nstopping\nstopped\n')
    assert.equal(r.stderr(), '')
  })

  test('SIGHUP to a service (no terminal) changes nothing and says so; it keeps running', async () => {
    const r = run()
    await r.line('ready')
    // Each one is answered (two sent at once may arrive as one: signals do not queue).
    r.child.kill('SIGHUP')
    await waitFor('the first SIGHUP line', () => r.stderr().split('\n').length === 2)
    r.child.kill('SIGHUP')
    await waitFor('the second SIGHUP line', () => r.stderr().split('\n').length === 3)
    assert.equal(r.child.exitCode, null, 'still running')
    assert.equal(
      r.stderr().split('\n')[0],
      'demo: SIGHUP changes nothing: the configuration is read at start (restart to apply a change), and logs go to standard output (nothing to reopen)',
    )
    r.child.kill('SIGTERM')
    const [code] = await r.exit
    assert.equal(code, 0)
    assert.equal(r.stdout(), 'ready\nstopping\nstopped\n')
  })

  test("SIGHUP to a service with something to reload runs the app's reload; a failed one is one line, and it keeps running", async () => {
    const r = run({ STOP_MODE: 'reload' })
    await r.line('ready')
    r.child.kill('SIGHUP')
    await r.line('reloaded 1')
    r.child.kill('SIGHUP')
    await waitFor('the failed reload', () => r.stderr() === 'demo: SIGHUP: reload failed: key does not match\n')
    r.child.kill('SIGHUP')
    await r.line('reloaded 3')
    r.child.kill('SIGTERM')
    const [code] = await r.exit
    assert.equal(code, 0)
    assert.equal(r.stdout(), 'ready\nreloaded 1\nreloaded 3\nstopping\nstopped\n')
  })

  test('SIGHUP from a closed terminal stops in order, as SIGTERM does', async () => {
    // util-linux's script(1) gives the program a terminal; its output comes back through it.
    const child = spawn(
      'script',
      ['-qefc', `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(script)}`, '/dev/null'],
      {
        env: { PATH: process.env.PATH, SHOW_PID: '1' },
      },
    )
    after(() => {
      if (child.exitCode === null) child.kill('SIGKILL')
    })
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
    })
    const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    const pid = Number((await waitFor('ready', () => /pid (\d+)\r?\nready/.exec(out)))[1])
    process.kill(pid, 'SIGHUP')
    const [code] = await exit
    assert.equal(code, 0, out)
    assert.match(out, /ready\r?\nstopping\r?\nstopped/)
  })

  test('SIGINT does the same', async () => {
    const r = run()
    await r.line('ready')
    r.child.kill('SIGINT')
    const [code] = await r.exit
    assert.equal(code, 0)
    assert.match(r.stdout(), /stopped\n$/)
  })

  test('a second signal exits at once', async () => {
    const r = run({ STOP_MODE: 'hang' })
    await r.line('ready')
    r.child.kill('SIGTERM')
    await r.line('stopping')
    r.child.kill('SIGINT')
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.equal(r.stderr(), 'demo: second SIGINT, exiting now\n')
  })

  test('a stop() that never finishes is cut off after the drain timeout', async () => {
    const r = run({ STOP_MODE: 'hang', DRAIN_MS: '50' })
    await r.line('ready')
    r.child.kill('SIGTERM')
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.equal(r.stderr(), 'demo: shutdown did not finish in time, exiting\n')
  })

  test('a failing stop() exits 1 with one line', async () => {
    const r = run({ STOP_MODE: 'fail' })
    await r.line('ready')
    r.child.kill('SIGTERM')
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.equal(r.stderr(), 'demo: shutdown failed: flush failed\n')
  })

  test('a StartupError prints one line per problem, no stack', async () => {
    const r = run({ STOP_MODE: 'startup' })
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.equal(r.stderr(), 'demo: listen: address in use\ndemo: db: unreachable\n')
    assert.equal(r.stdout(), '')
  })

  test('any other startup error is a bug and prints its stack', async () => {
    const r = run({ STOP_MODE: 'bug' })
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.match(r.stderr(), /^demo: unexpected error: TypeError: undefined is not a function\n\s+at /)
  })

  test('a port already taken is one line naming the address, not a stack trace', async (t) => {
    const { createServer } = await import('node:net')
    const holder = createServer()
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r))
    t.after(() => holder.close())
    const port = (holder.address() as { port: number }).port
    const r = run({ STOP_MODE: 'port-taken', PORT: String(port) })
    const [code] = await r.exit
    assert.equal(code, 1)
    assert.equal(
      r.stderr(),
      `demo: cannot listen on 127.0.0.1:${port}: the address is already in use (another service, or this one still running)\n`,
    )
  })
})
