/**
 * Every binary starts the same way, so a new app cannot miss the start-up work of #22 (tlsgate
 * did, and its `list` took 117 ms and 60 MiB instead of 71 ms and 55): its launcher in `bin/`
 * runs the pinned Node with the compile cache and the light flags for list, status and help, and
 * its entry file calls the kit's `prepareStartup` before it loads the program. Then each
 * launcher is run as a user would, from a shell whose PATH has no Node at all, and each app's
 * `--help` is held to the modules it needs.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { pathToFileURL } from 'node:url'

const root = join(import.meta.dirname, '..', '..', '..')
const apps = readdirSync(join(root, 'apps')).filter((name) => {
  try {
    readFileSync(join(root, 'apps', name, 'src', 'main.ts'))
    return true
  } catch {
    return false
  }
})

describe('binaries', () => {
  test('every app has a launcher and an entry file that start it the same way', () => {
    assert.ok(apps.length >= 7, `apps found: ${apps.join(', ')}`)
    const reference = readFileSync(join(root, 'bin', 'sshproxy'), 'utf8')
    for (const app of apps) {
      const launcher = readFileSync(join(root, 'bin', app), 'utf8')
      const prefix = app.toUpperCase()
      // The launchers differ only in the app's name and its environment prefix.
      assert.equal(launcher, reference.replaceAll('sshproxy', app).replaceAll('SSHPROXY', prefix), `bin/${app}`)
      const entry = readFileSync(join(root, 'apps', app, 'src', 'main.ts'), 'utf8')
      assert.match(entry, /^prepareStartup\(\)$/m, `apps/${app}/src/main.ts calls prepareStartup`)
      assert.match(
        entry,
        /await import\('\.\/cli\/program\.ts'\)/,
        `apps/${app}/src/main.ts loads its program after it`,
      )
    }
  })

  test("each app's --help, and the lists and status, load none of the builtins that cost start-up", () => {
    // child_process (and net behind it) came with commander, crypto with websignal's
    // thresholds, sshproxy's fingerprint fields and notify's token store, net with dnsctl's VIP check, fs's streams
    // and worker_threads with ESM imports of node:fs and node:util (kit startup-builtins.ts,
    // cli/lazy-builtins.ts): each 3-10 ms of a 60 ms `--help` or a 70 ms list (#22).
    const costly = /^NativeModule (child_process|net|tls|http|https|crypto|worker_threads|internal\/fs\/streams)$/
    // stdout and stderr are files: as a pipe or a terminal, Node's own stdio loads net.
    const dir = mkdtempSync(join(tmpdir(), 'start-up-modules-'))
    const report = `data:text/javascript,process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList)))`
    const main = (app: string) => join(root, 'apps', app, 'src', 'main.ts')
    const database = `sqlite:${join(dir, 'edgegate.db')}`
    execFileSync(process.execPath, [main('edgegate'), 'migrate', '--database', database])
    const notifyDatabase = `sqlite:${join(dir, 'notify.db')}`
    execFileSync(process.execPath, [main('notify'), 'migrate', '--database', notifyDatabase])
    const gateStore = join(dir, 'sshproxy.db')
    const openStore = pathToFileURL(join(root, 'apps', 'sshproxy', 'src', 'db', 'index.ts')).href
    execFileSync(process.execPath, [
      '--input-type=module',
      '-e',
      `import { openStore } from ${JSON.stringify(openStore)}; await (await openStore(${JSON.stringify(gateStore)})).close()`,
    ])
    const commands: Array<[string, string[]]> = [
      ...apps.map((app): [string, string[]] => [app, ['--help']]),
      ['edgegate', ['node', 'list', '--database', database]],
      ['sshproxy', ['list', '--db', gateStore]],
      ['sshproxy', ['status', '--db', gateStore, '--route', '127.0.0.1:2222=127.0.0.1:22']],
      ['edgegate', ['status', '--database', database]],
      ['notify', ['token', 'list', '--database', notifyDatabase]],
    ]
    try {
      for (const [app, args] of commands) {
        const command = `${app} ${args.slice(0, 2).join(' ')}`
        const file = join(dir, 'modules.json')
        const fd = openSync(file, 'w')
        try {
          const run = spawnSync(process.execPath, ['--import', report, main(app), ...args], {
            stdio: ['ignore', 'ignore', fd],
          })
          assert.equal(run.status, 0, `${command}: ${readFileSync(file, 'utf8')}`)
        } finally {
          closeSync(fd)
        }
        // edgegate status asks the server (GET /readyz over HTTPS) whether it answers: the database
        // alone cannot tell an outage of the control plane from silent nodes. That needs TLS.
        const asksServer = app === 'edgegate' && args[0] === 'status'
        const loaded = (JSON.parse(readFileSync(file, 'utf8')) as string[]).filter(
          (m) => costly.test(m) && !(asksServer && /^NativeModule (net|tls|crypto)$/.test(m)),
        )
        assert.deepEqual(loaded, [], `${command} loads ${loaded.join(', ')}`)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('each launcher runs its app without a Node on the PATH', () => {
    for (const app of apps) {
      const out = execFileSync(join(root, 'bin', app), ['--version'], {
        env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' },
        encoding: 'utf8',
      })
      assert.match(out, /^\d+\.\d+\.\d+\n$/, `bin/${app} --version`)
    }
  })

  test('a launcher names its program the way it was run: bin/APP in a checkout, APP when on the PATH', () => {
    const env = { PATH: '/usr/bin:/bin', HOME: '/nonexistent' }
    const typed = execFileSync('bin/notify', ['token', '--help'], { cwd: root, env, encoding: 'utf8' })
    assert.match(typed, /^Usage: bin\/notify token \[options\] \[command\]$/m)
    const onPath = mkdtempSync(join(tmpdir(), 'gatehouse-path-'))
    try {
      symlinkSync(join(root, 'bin', 'notify'), join(onPath, 'notify'))
      const installed = execFileSync('notify', ['token', '--help'], {
        env: { ...env, PATH: `${onPath}:${env.PATH}` },
        encoding: 'utf8',
      })
      assert.match(installed, /^Usage: notify token \[options\] \[command\]$/m)
    } finally {
      rmSync(onPath, { recursive: true, force: true })
    }
  })
})
