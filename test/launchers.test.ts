/**
 * The root bin/<app> launchers and the packages' "bin" entries, run as a user would: from a
 * shell whose first `node` on PATH is the system Node (older than 24), through symlinks, and
 * with the config file `npm start` writes.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'

const root = join(import.meta.dirname, '..')
const APPS = ['edgegate', 'sshproxy', 'websignal', 'artsvc', 'dnsctl', 'notify', 'tlsgate'].filter((a) =>
  existsSync(join(root, 'apps', a)),
)
// A clean environment whose node is the system one (v20 here): what a pasted command meets.
const cleanEnv = { PATH: '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' }

function sh(command: string, args: string[], env: Record<string, string> = cleanEnv, cwd = root) {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 60_000 })
}

test('the system node on the clean PATH is older than 24, so the launchers are what makes it work', () => {
  const r = sh('node', ['--version'])
  assert.equal(r.status, 0)
  assert.ok(Number(/^v(\d+)/.exec(r.stdout)?.[1]) < 24, r.stdout)
})

for (const app of APPS) {
  // The usage line names the program the way it was run, so its examples paste as printed.
  test(`bin/${app} --help runs on the pinned Node from a clean shell`, () => {
    const r = sh(join(root, 'bin', app), ['--help'])
    assert.equal(r.status, 0, r.stderr)
    assert.ok(r.stdout.startsWith(`Usage: ${join(root, 'bin', app)} [options]`), r.stdout)
    const relative = sh(`bin/${app}`, ['--help'])
    assert.ok(relative.stdout.startsWith(`Usage: bin/${app} [options]`), relative.stdout)
  })
  test(`node_modules/.bin/${app} (the package "bin") runs too, and names itself, not the launcher`, () => {
    const bin = join(root, 'node_modules', '.bin', app)
    const r = sh(bin, ['--help'])
    assert.equal(r.status, 0, r.stderr)
    assert.ok(r.stdout.startsWith(`Usage: ${bin} [options]`), r.stdout)
    // npx and npm scripts put node_modules/.bin on PATH: there the bare name is what to type.
    const onPath = sh(app, ['--help'], { ...cleanEnv, PATH: `${join(root, 'node_modules', '.bin')}:${cleanEnv.PATH}` })
    assert.equal(onPath.status, 0, onPath.stderr)
    assert.ok(onPath.stdout.startsWith(`Usage: ${app} [options]`), onPath.stdout)
  })
}

test("the launchers keep Node's compile cache in the user's own cache folder, owner-only", (t) => {
  const home = mkdtempSync(join(tmpdir(), 'gatehouse-cache-'))
  t.after(() => rmSync(home, { recursive: true, force: true }))
  const r = sh(join(root, 'bin', 'notify'), ['--help'], { ...cleanEnv, HOME: home })
  assert.equal(r.status, 0, r.stderr)
  const dir = join(home, '.cache', 'gatehouse', 'node-compile-cache')
  assert.equal(statSync(dir).mode & 0o777, 0o700)
  assert.ok(readdirSync(dir).length > 0, 'compiled modules were kept')
  const off = join(home, 'off')
  mkdirSync(off)
  assert.equal(
    sh(join(root, 'bin', 'notify'), ['--help'], { ...cleanEnv, HOME: off, NODE_DISABLE_COMPILE_CACHE: '1' }).status,
    0,
  )
  assert.equal(existsSync(join(off, '.cache')), false, 'NODE_DISABLE_COMPILE_CACHE=1 turns it off')
  // Without HOME (env -i, a service unit) no folder is made: as root, "/nonexistent/.cache" was.
  const { HOME: _home, ...noHome } = cleanEnv
  const existed = existsSync('/nonexistent')
  assert.equal(sh(join(root, 'bin', 'notify'), ['--help'], noHome).status, 0)
  if (!existed) assert.equal(existsSync('/nonexistent'), false, 'no cache folder is made without HOME')
})

test('a launcher reached through a symlink in another folder still finds the repository', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bin-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  symlinkSync(join(root, 'bin', 'edgegate'), join(dir, 'edgegate'))
  const r = sh(join(dir, 'edgegate'), ['--help'], cleanEnv, dir)
  assert.equal(r.status, 0, r.stderr)
  assert.ok(r.stdout.startsWith(`Usage: ${join(dir, 'edgegate')} [options]`), r.stdout)
})

test('the launcher points EDGEGATE_CONFIG at the stack config file unless the caller set it', (t) => {
  const home = mkdtempSync(join(tmpdir(), 'gatehouse-home-'))
  t.after(() => rmSync(home, { recursive: true, force: true }))
  const env = { ...cleanEnv, GATEHOUSE_HOME: home }
  mkdirSync(join(home, 'edgegate'))
  const db = join(home, 'edgegate', 'from-config.db')
  writeFileSync(join(home, 'edgegate', 'config.json'), JSON.stringify({ database: `sqlite:${db}` }))
  // Admin commands refuse a database that does not exist; `migrate` creates it.
  assert.equal(sh(join(root, 'bin', 'edgegate'), ['migrate'], env).status, 0)
  const added = sh(join(root, 'bin', 'edgegate'), ['admin', 'add', 'alice'], env)
  assert.equal(added.status, 0, added.stderr)
  assert.ok(existsSync(db), 'the admin was written to the database named by the config file')
  const listed = sh(join(root, 'bin', 'edgegate'), ['admin', 'list'], env)
  assert.equal(listed.status, 0, listed.stderr)
  assert.match(listed.stdout, /alice/)
  // An explicit EDGEGATE_CONFIG wins over the stack's file.
  const other = join(home, 'other.json')
  const otherDb = join(home, 'other.db')
  writeFileSync(other, JSON.stringify({ database: `sqlite:${otherDb}` }))
  assert.equal(sh(join(root, 'bin', 'edgegate'), ['migrate'], { ...env, EDGEGATE_CONFIG: other }).status, 0)
  const mine = sh(join(root, 'bin', 'edgegate'), ['admin', 'add', 'bob'], { ...env, EDGEGATE_CONFIG: other })
  assert.equal(mine.status, 0, mine.stderr)
  assert.ok(existsSync(otherDb))
  assert.doesNotMatch(sh(join(root, 'bin', 'edgegate'), ['admin', 'list'], env).stdout, /bob/)
})

test('without node_modules the launcher says what to run, in one line', (t) => {
  const copy = mkdtempSync(join(tmpdir(), 'gatehouse-fresh-'))
  t.after(() => rmSync(copy, { recursive: true, force: true }))
  cpSync(join(root, 'bin'), join(copy, 'bin'), { recursive: true })
  const r = sh(join(copy, 'bin', 'notify'), ['--help'], cleanEnv, copy)
  assert.equal(r.status, 1)
  assert.equal(r.stdout, '')
  assert.equal(r.stderr.trim().split('\n').length, 1)
  assert.match(r.stderr, /^notify: .*node_modules\/\.bin\/node is missing: run npm start or npm ci first/)
})
