/**
 * The app shell as users meet it: a program built with createCli run as a child process (exit
 * codes, one-line errors, help with examples, the version, flags after positionals, tables and
 * JSON, colour only on a terminal with NO_COLOR respected).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'

const PROGRAM = join(import.meta.dirname, 'fixtures', 'cli-program.ts')
const VERSION = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')).version

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = { ...process.env }
  delete clean.FORCE_COLOR
  delete clean.NO_COLOR
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PROGRAM, ...args], { env: { ...clean, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

/** Run under a pseudo-terminal (util-linux `script`), so stdout is a TTY. */
function runOnTty(args: string[], env: NodeJS.ProcessEnv = {}) {
  const command = [process.execPath, PROGRAM, ...args].map((a) => `'${a}'`).join(' ')
  return new Promise<string>((resolve, reject) => {
    const clean = { ...process.env }
    delete clean.FORCE_COLOR
    delete clean.NO_COLOR
    // Node's colour detection gives a terminal two colours when CI is set (as in .ci/run).
    delete clean.CI
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...clean, TERM: 'xterm-256color', ...env } })
    let out = ''
    child.stdout.on('data', (c) => (out += c))
    child.on('error', reject)
    child.on('close', () => resolve(out))
  })
}

const oneLine = (stderr: string) => {
  assert.equal(stderr.trim().split('\n').length, 1, stderr)
  assert.doesNotMatch(stderr, /\n\s+at /)
}

describe('kit app shell (createCli/runCli)', () => {
  test('success exits 0; flags go before or after positionals', async () => {
    assert.deepEqual(await run(['greet', 'world']), { code: 0, stdout: 'hello world\n', stderr: '' })
    assert.equal((await run(['greet', '--loud', 'world'])).stdout, 'HELLO world\n')
    assert.equal((await run(['greet', 'world', '--loud'])).stdout, 'HELLO world\n')
  })

  test('--help on the program and on each command exits 0 and shows examples; --version is the package version', async () => {
    const help = await run(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /Usage: demo/)
    assert.match(help.stdout, /greet/)
    const greet = await run(['greet', '--help'])
    assert.equal(greet.code, 0)
    assert.match(greet.stdout, /--loud/)
    assert.match(greet.stdout, /Examples:\n {2}\$ demo greet --loud world/)
    const version = await run(['--version'])
    assert.deepEqual([version.code, version.stdout], [0, `${VERSION}\n`])
  })

  test('usage errors exit 2 with one line naming the program', async () => {
    for (const args of [[], ['nope'], ['greet'], ['greet', 'a', 'b'], ['greet', '--bogus', 'x'], ['misuse']]) {
      const r = await run(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      if (args.length > 0) {
        oneLine(r.stderr)
        assert.match(r.stderr, /^demo: /)
      }
    }
    assert.match((await run(['greet', '--bogus', 'x'])).stderr, /^demo: unknown option '--bogus'/)
    const dashed = await run(['greet', '-Xq3_id'])
    assert.equal(dashed.code, 2)
    assert.equal(dashed.stderr, "demo: unknown option '-Xq3_id' (a value that begins with '-' goes after --)\n")
    const afterDashes = await run(['greet', '--', '-Xq3_id'])
    assert.equal(afterDashes.code, 0, afterDashes.stderr)
    assert.equal((await run(['misuse'])).stderr, 'demo: give --a or --b, not both\n')
  })

  test('failures exit 1 with one line and no stack trace', async () => {
    const fail = await run(['fail'])
    assert.deepEqual([fail.code, fail.stderr], [1, 'demo: the thing; failed\n'])
    // A file name (or a server's words) quoted in a message cannot drive the terminal.
    const named = await run(['open', 'x\u001b[31mred\u0007'])
    assert.deepEqual([named.code, named.stderr], [1, 'demo: cannot read x\\e[31mred\\x07: ENOENT\n'])
    const appError = await run(['app-error'])
    assert.deepEqual([appError.code, appError.stderr], [1, 'demo: no such thing\n'])
    const locked = await run(['locked', join(tempDir('cli-program-').path, 'locked.db')])
    assert.deepEqual(
      [locked.code, locked.stderr],
      [1, 'demo: the database is unavailable (database is locked); another process holds it: try again in a moment\n'],
    )
    const bug = await run(['bug'])
    assert.equal(bug.code, 1)
    oneLine(bug.stderr)
    assert.match(bug.stderr, /^demo: unexpected error: undefined is not a function/)
    const debug = await run(['bug'], { GATEHOUSE_DEBUG: '1' })
    assert.match(debug.stderr, /\n\s+at /, 'GATEHOUSE_DEBUG adds the stack')
  })

  test('lists: a table with headers, escaped user text, no colour in a pipe; --json for scripts', async () => {
    const table = await run(['list'])
    assert.equal(table.code, 0)
    const evil = 'evil\\e]0;title\\x07'
    const w = evil.length + 2
    assert.equal(table.stdout, `${'NAME'.padEnd(w)}STATE\n${'alpha'.padEnd(w)}ok\n${evil}  bad\n`)
    const json = await run(['list', '--json'])
    assert.deepEqual(JSON.parse(json.stdout), [
      { name: 'alpha', state: 'ok' },
      { name: 'evil\x1b]0;title\x07', state: 'bad' },
    ])
  })

  test('an empty list says so in words; its JSON is still an array; the words are escaped too', async () => {
    const none = await run(['list', '--none', 'state=\x1b[2Jgone'])
    assert.equal(none.code, 0)
    assert.equal(none.stdout, 'no things match state=\\e[2Jgone\n')
    const json = await run(['list', '--none', 'x', '--json'])
    assert.deepEqual(JSON.parse(json.stdout), [])
  })

  test('a reader that closes the pipe early (| head) ends the program quietly with 0', async () => {
    const clean = { ...process.env }
    delete clean.FORCE_COLOR
    const child = spawn(process.execPath, [PROGRAM, 'many'], { env: clean })
    let stderr = ''
    child.stderr.on('data', (c) => (stderr += c))
    child.stdout.once('data', () => child.stdout.destroy())
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)))
    assert.equal(code, 0, stderr)
    assert.equal(stderr, '')
  })

  test('colour only on a terminal, and not with NO_COLOR', async () => {
    const tty = await runOnTty(['list'])
    assert.match(tty, /\x1b\[1mNAME/, 'bold header on a terminal')
    assert.match(tty, /\x1b\[32malpha|\x1b\[32mok/, 'green state on a terminal')
    assert.doesNotMatch(tty, /\x1b\]0;title/, 'user text never reaches the terminal raw')
    const noColor = await runOnTty(['list'], { NO_COLOR: '1' })
    assert.match(noColor, /NAME/)
    assert.doesNotMatch(noColor, /\x1b\[/)
  })
})
