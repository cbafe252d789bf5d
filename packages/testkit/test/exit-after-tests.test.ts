import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { tempDir } from '../src/index.ts'

const MODULE = join(import.meta.dirname, '..', 'src', 'exit-after-tests.ts')

/** `node --test` over one file, the way scripts/test.ts runs every file. */
function runFile(source: string, env: NodeJS.ProcessEnv = {}) {
  const dir = tempDir('testkit-exit-')
  try {
    const file = join(dir.path, 'fixture.test.mjs')
    writeFileSync(file, source)
    // Without this runner's NODE_TEST_CONTEXT, or the nested runner reports in its child format.
    const { NODE_TEST_CONTEXT: _, ...outer } = process.env
    const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', '--import', MODULE, file], {
      encoding: 'utf8',
      env: { ...outer, ...env },
      timeout: 60_000,
    })
    const count = (name: string) => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(r.stdout)?.[1])
    return { status: r.status, stderr: r.stderr, stdout: r.stdout, tests: count('tests'), pass: count('pass') }
  } finally {
    dir.remove()
  }
}

test('every result of a file reaches the report (Node dropped the tail with --test-force-exit)', () => {
  const tests = Array.from({ length: 400 }, (_, i) => `test('t${i}', () => {})`).join('\n')
  const r = runFile(`import { test } from 'node:test'\n${tests}\n`)
  assert.equal(r.status, 0, r.stdout)
  assert.equal(r.tests, 400)
  assert.equal(r.pass, 400)
})

test('a file that leaves a server listening exits after the grace, names what held it, and keeps its results', () => {
  const r = runFile(
    `import { test } from 'node:test'
import { createServer } from 'node:net'
test('leaks', async () => { await new Promise((r) => createServer().listen(0, '127.0.0.1', r)) })
test('fails', () => { throw new Error('boom') })
`,
    { GATEHOUSE_TEST_EXIT_GRACE_MS: '500' },
  )
  assert.equal(r.tests, 2)
  assert.equal(r.pass, 1)
  assert.equal(r.status, 1, 'the failure keeps its exit code')
  assert.match(r.stdout, /still running 0\.5 s after its tests \(held by [^)]*TCPServerWrap/)
})
