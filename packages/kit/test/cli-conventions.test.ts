/**
 * The parts of the app shell that are plain functions: single-dash long flags (the spec's
 * `-listen` form), settings without a flag in `--help`, and the compile cache's folder.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { compileCacheDir } from '../src/cli/compile-cache.ts'
import { booleanFlagValues, createCli, runCli, singleDashLongFlags } from '../src/cli/program.ts'
import { addSchemaOptions, schemaFlags, withEnvironmentHelp } from '../src/cli/schema-options.ts'
import { field } from '../src/config.ts'

const schema = {
  listen: field.listen({ flag: 'listen', env: 'DEMO_LISTEN', default: '127.0.0.1:8080', doc: 'where to listen' }),
  hook: field.string({ flag: 'hook-id', env: 'DEMO_HOOK', doc: 'a hook' }),
  password: field.string({ env: 'DEMO_PASSWORD', secret: true, doc: 'the password' }),
  region: field.string({ env: 'DEMO_REGION', default: 'us-east-1' }),
}

function program() {
  const p = createCli({ name: 'demo', description: 'demo', packageJson: new URL('../package.json', import.meta.url) })
  withEnvironmentHelp(addSchemaOptions(p.command('serve', { isDefault: true }), schema), schema)
  p.command('token').command('list').option('--json', 'JSON').option('-v, --verbose', 'more')
  return p
}

describe('single-dash long flags', () => {
  test('known long flags of any command, -help and -version become double-dash; short flags, unknown words and what follows -- stay', () => {
    assert.deepEqual(
      singleDashLongFlags(program(), ['-listen', '127.0.0.1:1', '-hook-id=abc', '-json', '-help', '-version']),
      ['--listen', '127.0.0.1:1', '--hook-id=abc', '--json', '--help', '--version'],
    )
    assert.deepEqual(singleDashLongFlags(program(), ['-v', '-h', '-nope', 'serve', '--', '-listen']), [
      '-v',
      '-h',
      '-nope',
      'serve',
      '--',
      '-listen',
    ])
  })
})

describe('boolean flags take a value when written with =', () => {
  const flagsOf = async (argv: string[]) => {
    const schema = {
      shadow: field.boolean({ flag: 'shadow', default: true, doc: 'shadow mode' }),
      name: field.string({ flag: 'name', doc: 'a name' }),
    }
    const p = createCli({ name: 'demo', description: 'demo', packageJson: new URL('../package.json', import.meta.url) })
    let got: Record<string, unknown> | undefined
    addSchemaOptions(p.command('serve'), schema).action((o) => {
      got = schemaFlags(o, schema)
    })
    let err = ''
    p.configureOutput({ writeErr: (t) => (err += t) })
    const code = await runCli(p, argv)
    return { code, got, err }
  }

  test('--flag=false and --no-flag turn a default-on boolean off; --flag and --flag=true turn it on', async () => {
    assert.deepEqual((await flagsOf(['serve', '--shadow=false'])).got, { shadow: false })
    assert.deepEqual((await flagsOf(['serve', '--shadow=off'])).got, { shadow: false })
    assert.deepEqual((await flagsOf(['serve', '--no-shadow'])).got, { shadow: false })
    assert.deepEqual((await flagsOf(['serve', '--shadow'])).got, { shadow: true })
    assert.deepEqual((await flagsOf(['serve', '--shadow=TRUE'])).got, { shadow: true })
    assert.deepEqual((await flagsOf(['serve'])).got, {})
  })

  test('another value is a usage error naming the words accepted; string flags and arguments after -- are left alone', async () => {
    const bad = await flagsOf(['serve', '--shadow=maybe'])
    assert.equal(bad.code, 2)
    assert.equal(bad.got, undefined)
    assert.match(bad.err, /--shadow takes true or false \(or 1\/0, yes\/no, on\/off\), not "maybe"/)
    assert.deepEqual((await flagsOf(['serve', '--name=false'])).got, { name: 'false' })
    assert.deepEqual(booleanFlagValues(program(), ['--', '--shadow=false']), ['--', '--shadow=false'])
  })
})

describe('help for settings without a flag', () => {
  test('lists each with its _FILE form when secret, its doc and its default', () => {
    const help = captureAfterHelp()
    assert.match(help, /--listen <host:port> +where to listen \(default 127\.0\.0\.1:8080\) \[env\s+DEMO_LISTEN\]/)
    assert.match(
      help,
      /Environment only:\n {2}DEMO_PASSWORD \(or DEMO_PASSWORD_FILE, a file holding it\): the password\n {2}DEMO_REGION \(default us-east-1\)/,
    )
    assert.doesNotMatch(help, /DEMO_HOOK \(/, 'a setting with a flag is listed with its flag, not again')
  })
})

/** Commander prints "after" help texts only when it outputs help: capture that output. */
function captureAfterHelp(): string {
  let text = ''
  const p = program()
  p.configureOutput({ writeOut: (t) => (text += t) })
  p.commands[0]!.configureOutput({ writeOut: (t) => (text += t) })
  try {
    p.parse(['serve', '--help'], { from: 'user' })
  } catch {
    // exitOverride: help "exits" by throwing
  }
  return text
}

describe('compile cache folder', () => {
  test("the user's own cache folder, NODE_COMPILE_CACHE when set, none without a home", () => {
    assert.equal(compileCacheDir({ HOME: '/home/ann' }), '/home/ann/.cache/gatehouse/node-compile-cache')
    assert.equal(compileCacheDir({ XDG_CACHE_HOME: '/c', HOME: '/h' }), '/c/gatehouse/node-compile-cache')
    assert.equal(compileCacheDir({ NODE_COMPILE_CACHE: '/x' }), '/x')
  })

  test('a binary run directly creates it owner-only and fills it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'kit-cc-'))
    try {
      const { spawnSync } = await import('node:child_process')
      const main = join(import.meta.dirname, '..', '..', '..', 'apps', 'dnsctl', 'src', 'main.ts')
      const env = { PATH: process.env.PATH ?? '', HOME: home }
      assert.equal(spawnSync(process.execPath, [main, '--help'], { env }).status, 0)
      const dir = join(home, '.cache', 'gatehouse', 'node-compile-cache')
      assert.equal(statSync(dir).mode & 0o777, 0o700)
      const off = mkdtempSync(join(tmpdir(), 'kit-cc-off-'))
      spawnSync(process.execPath, [main, '--help'], { env: { ...env, HOME: off, NODE_DISABLE_COMPILE_CACHE: '1' } })
      assert.throws(() => statSync(join(off, '.cache')), /ENOENT/, 'NODE_DISABLE_COMPILE_CACHE turns it off')
      rmSync(off, { recursive: true, force: true })
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe('a default command', () => {
  test('an unknown first word is an unknown command, not "too many arguments" for the default one', async () => {
    const p = program()
    let ran = 0
    p.commands
      .find((c) => c.name() === 'serve')!
      .action(() => {
        ran++
      })
    let err = ''
    p.configureOutput({ writeErr: (t) => (err += t) })
    assert.equal(await runCli(p, ['bogus']), 2)
    assert.equal(err, "demo: unknown command 'bogus' (commands: serve, token; see demo --help)\n")
    assert.equal(ran, 0)
    // Flags alone still run the default command, and known commands run as before.
    assert.equal(await runCli(p, ['--listen', '127.0.0.1:9']), 0)
    assert.equal(ran, 1)
    assert.equal(await runCli(p, ['serve']), 0)
    assert.equal(ran, 2)
  })
})
