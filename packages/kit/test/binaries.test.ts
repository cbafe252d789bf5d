/**
 * Every binary starts the same way, so a new app cannot miss the start-up work of #22 (tlsgate
 * did, and its `list` took 117 ms and 60 MiB instead of 71 ms and 55): its launcher in `bin/`
 * runs the pinned Node with the compile cache and the light flags for list, status and help, and
 * its entry file calls the kit's `prepareStartup` before it loads the program. Then each
 * launcher is run as a user would, from a shell whose PATH has no Node at all.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'

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

  test('each launcher runs its app without a Node on the PATH', () => {
    for (const app of apps) {
      const out = execFileSync(join(root, 'bin', app), ['--version'], {
        env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' },
        encoding: 'utf8',
      })
      assert.match(out, /^\d+\.\d+\.\d+\n$/, `bin/${app} --version`)
    }
  })
})
