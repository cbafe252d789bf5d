import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '@gatehouse/kit'
import { freePort, tempDir } from '@gatehouse/testkit'
import { finishConfig, loadServiceConfig, readConfig, schema } from '../src/config.ts'

const main = join(import.meta.dirname, '..', 'src', 'main.ts')

function run(args: string[], env: Record<string, string>, timeout = 20_000) {
  return spawnSync(process.execPath, [main, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout,
  })
}

describe('configuration', () => {
  test('defaults follow the spec: 127.0.0.1:8080, notify.db, unauthenticated development mode', () => {
    const c = readConfig([], {})
    assert.equal(c.listen, '127.0.0.1:8080')
    assert.equal(c.database, 'sqlite:notify.db')
    assert.equal(c.auth, false)
  })

  test('spec-style single-dash flags win over the environment', () => {
    const c = readConfig(['-listen', '127.0.0.2:9000', '-hook-id', 'abcdefghijklmnop1234'], {
      NOTIFY_LISTEN: '127.0.0.1:1',
      NOTIFY_HOOK_TOKEN: 'zzzzzzzzzzzzzzzzzzzz',
    })
    assert.equal(c.listen, '127.0.0.2:9000')
    assert.equal(c.hookToken, 'abcdefghijklmnop1234')
    assert.equal(readConfig(['--listen=127.0.0.1:7000'], {}).listen, '127.0.0.1:7000')
  })

  test('cross-field rules name each setting the way it was given: a key of the config file (and which file), a flag, a variable', () => {
    const dir = tempDir('notify-config-')
    try {
      const file = join(dir.path, 'notify.json')
      writeFileSync(file, JSON.stringify({ readerUsername: 'admin', retention: '1h' }))
      const err = (() => {
        try {
          readConfig(['--config', file, '-listen', '0.0.0.0:8080'], {})
        } catch (e) {
          return e as ConfigError
        }
        return undefined
      })()
      assert.ok(err instanceof ConfigError)
      assert.deepEqual(err.lines, [
        `retention (in ${file}): at least 24h, or 0 to keep notifications`,
        `NOTIFY_READER_PASSWORD: required when readerUsername (in ${file}) is set`,
        '--listen: 0.0.0.0:8080 is not a loopback address; without NOTIFY_READER_PASSWORD the service is unauthenticated and only listens on loopback',
      ])
    } finally {
      dir.remove()
    }
  })

  test("a flag is named --flag in every line, however it was typed: the kit loader's bad values and notify's cross-field rules alike", () => {
    const err = (() => {
      try {
        readConfig(
          [
            '-body-limit',
            'lots',
            '-listen',
            '0.0.0.0:8080',
            '-retention',
            '1h',
            '--session-ttl=2h',
            '-session-max-age',
            '1h',
            '-reader-username',
            'admin',
          ],
          {},
        )
      } catch (e) {
        return e as ConfigError
      }
      return undefined
    })()
    assert.ok(err instanceof ConfigError)
    assert.deepEqual(err.lines, [
      // The kit's line (packages/kit/src/config.ts) ...
      '--body-limit: invalid size "lots" (use e.g. 1048576, 512KiB, 25MiB, 1GB)',
      // ... and notify's, one naming for both.
      '--retention: at least 24h, or 0 to keep notifications',
      '--session-max-age: at least --session-ttl (equal to it: sessions are not renewed)',
      'NOTIFY_READER_PASSWORD: required when --reader-username is set',
      '--listen: 0.0.0.0:8080 is not a loopback address; without NOTIFY_READER_PASSWORD the service is unauthenticated and only listens on loopback',
    ])
    for (const line of err.lines) assert.doesNotMatch(line, /(^|[\s(])-[a-z]/, 'no setting named with one dash')
  })

  test('a secret given as a file is named by the variable that was set, NOTIFY_READER_PASSWORD_FILE', () => {
    const dir = tempDir('notify-config-')
    try {
      const secret = join(dir.path, 'reader-password')
      writeFileSync(secret, 'a-long-enough-password\n', { mode: 0o600 })
      const err = (() => {
        try {
          readConfig([], { NOTIFY_READER_PASSWORD_FILE: secret })
        } catch (e) {
          return e as ConfigError
        }
        return undefined
      })()
      assert.ok(err instanceof ConfigError)
      assert.deepEqual(err.lines, [
        'NOTIFY_READER_USERNAME: required when NOTIFY_READER_PASSWORD_FILE is set',
        'NOTIFY_PUBLIC_URL: required when reader authentication is on (NOTIFY_READER_PASSWORD_FILE is set)',
      ])
    } finally {
      dir.remove()
    }
  })

  test('bad values and broken cross-field rules are reported together, each named as given; a rule reading a bad value is skipped', () => {
    const dir = tempDir('notify-config-')
    try {
      const file = join(dir.path, 'notify.json')
      writeFileSync(file, JSON.stringify({ retention: '1h', bodyLimit: 'lots', sessionTtl: '1m' }))
      const err = (() => {
        try {
          readConfig(['--config', file, '-listen', '0.0.0.0:8080', '-session-max-age', '10m'], {
            NOTIFY_READER_PASSWORD: 'short',
          })
        } catch (e) {
          return e as ConfigError
        }
        return undefined
      })()
      assert.ok(err instanceof ConfigError)
      assert.deepEqual(err.lines, [
        'NOTIFY_READER_PASSWORD: must be at least 12 characters',
        'sessionTtl: must be at least 5m',
        'bodyLimit: invalid size "lots" (use e.g. 1048576, 512KiB, 25MiB, 1GB)',
        // The cross-field rules whose settings are good; a short password still counts as given,
        // so the listener is not refused for being unauthenticated, and the session rule, which
        // reads the bad sessionTtl, is left out.
        `retention (in ${file}): at least 24h, or 0 to keep notifications`,
        'NOTIFY_READER_USERNAME: required when NOTIFY_READER_PASSWORD is set',
        'NOTIFY_PUBLIC_URL: required when reader authentication is on (NOTIFY_READER_PASSWORD is set)',
      ])
    } finally {
      dir.remove()
    }
  })

  test('cross-field rules are all reported at once', () => {
    const err = (() => {
      try {
        finishConfig(
          loadConfig(schema, {
            env: { NOTIFY_READER_PASSWORD: 'long-enough-password', NOTIFY_LISTEN: '0.0.0.0:8080' },
          }).config,
        )
      } catch (e) {
        return e as ConfigError
      }
      return undefined
    })()
    assert.ok(err instanceof ConfigError)
    assert.ok(err.lines.some((l) => l.startsWith('NOTIFY_READER_USERNAME: required')))
    assert.ok(err.lines.some((l) => l.startsWith('NOTIFY_PUBLIC_URL: required')))
    assert.throws(() => readConfig([], { NOTIFY_LISTEN: '0.0.0.0:8080' }), /not a loopback address/)
    assert.throws(() => readConfig([], { NOTIFY_READER_USERNAME: 'x', NOTIFY_READER_PASSWORD: 'short' }), /at least 12/)
    assert.throws(
      () =>
        readConfig([], {
          NOTIFY_READER_USERNAME: 'x',
          NOTIFY_READER_PASSWORD: 'long-enough-password',
          NOTIFY_PUBLIC_URL: 'https://n.example/app',
        }),
      /origin only/,
    )
    const ok = readConfig([], {
      NOTIFY_READER_USERNAME: 'admin',
      NOTIFY_READER_PASSWORD: 'long-enough-password',
      NOTIFY_PUBLIC_URL: 'https://notify.example',
      NOTIFY_LISTEN: '0.0.0.0:8080',
    })
    assert.equal(ok.auth, true)
    assert.equal(ok.publicOrigin, 'https://notify.example')
  })
})

describe('startup failures (child process)', () => {
  test('authentication without NOTIFY_PUBLIC_URL: one clear line, exit 1', () => {
    const r = run([], { NOTIFY_READER_USERNAME: 'admin', NOTIFY_READER_PASSWORD: 'long-enough-password' })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /^notify: NOTIFY_PUBLIC_URL: required when reader authentication is on/m)
    assert.doesNotMatch(r.stderr, /\n\s+at /)
  })

  test('a config file with a bad value and a cross-field problem: both reported, one line each, exit 1', () => {
    const dir = tempDir('notify-config-')
    try {
      const file = join(dir.path, 'notify.json')
      writeFileSync(file, JSON.stringify({ retention: '1h', pushTtl: '1y' }))
      const r = run(['--config', file], { NOTIFY_AUDIT_RETENTION: '2h', NOTIFY_BCRYPT_COST: '40' })
      assert.equal(r.status, 1)
      assert.deepEqual(r.stderr.trimEnd().split('\n'), [
        'notify: NOTIFY_BCRYPT_COST: must be at most 15, got 40',
        `notify: pushTtl: invalid duration "1y" (use e.g. 500ms, 30s, 15m, 12h, 1h30m)`,
        `notify: retention (in ${file}): at least 24h, or 0 to keep notifications`,
        'notify: NOTIFY_AUDIT_RETENTION: at least 24h, or 0 to keep the audit log',
      ])
      // A file that is not JSON is the one problem: the settings it holds are unknown.
      writeFileSync(file, '{"retention": "1h",')
      const broken = run(['--config', file], { NOTIFY_AUDIT_RETENTION: '2h' })
      assert.equal(broken.status, 1)
      assert.equal(broken.stderr.trimEnd().split('\n').length, 1, broken.stderr)
      assert.match(broken.stderr, /^notify: config file .*: invalid JSON/)
    } finally {
      dir.remove()
    }
  })

  test('unauthenticated mode on a non-loopback address is refused', () => {
    const r = run(['-listen', '0.0.0.0:8080'], {})
    assert.equal(r.status, 1)
    assert.match(r.stderr, /not a loopback address/)
  })

  test('an unreachable database and an unknown flag stop startup', async () => {
    const port = await freePort()
    const r = run([], { NOTIFY_DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/x`, NOTIFY_LISTEN: '127.0.0.1:0' })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /^notify: database .* is unreachable/m)
    // A wrong flag is a usage error (exit 2), as with every Gatehouse binary.
    const u = run(['-no-such-flag', 'x'], {})
    assert.equal(u.status, 2)
    assert.match(u.stderr, /^notify: unknown option '-no-such-flag'/)
  })

  test('serve --help lists every flag and variable', () => {
    const r = run(['serve', '-help'], {})
    assert.equal(r.status, 0)
    for (const name of ['-listen', 'NOTIFY_HOOK_TOKEN', 'NOTIFY_PUBLIC_URL', 'NOTIFY_READER_PASSWORD']) {
      assert.ok(r.stdout.includes(name.replace(/^-/, '--')) || r.stdout.includes(name), name)
    }
  })

  test('a running service warns about development mode and a secret file every user may read, and stops cleanly on SIGTERM', async () => {
    const dir = tempDir('notify-main-')
    const port = await freePort()
    const tokenFile = join(dir.path, 'hook-token')
    writeFileSync(tokenFile, 'a'.repeat(48))
    chmodSync(tokenFile, 0o644)
    const { spawn } = await import('node:child_process')
    const child = spawn(process.execPath, [main, '-listen', `127.0.0.1:${port}`], {
      env: {
        PATH: process.env.PATH ?? '',
        NOTIFY_DATABASE_URL: `sqlite:${join(dir.path, 'n.db')}`,
        NOTIFY_HOOK_TOKEN_FILE: tokenFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
    })
    const deadline = Date.now() + 15_000
    // Poll for the condition with a deadline.
    while (!out.includes('notify listening') && Date.now() < deadline && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 20))
    }
    assert.match(out, /unauthenticated development mode/)
    assert.ok(
      out.includes(
        `${tokenFile} holds a secret (NOTIFY_HOOK_TOKEN_FILE) and every user of this host can read it (mode 0644)`,
      ),
      out,
    )
    const health = await fetch(`http://127.0.0.1:${port}/healthz`)
    assert.equal(health.status, 200)
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
    assert.equal(ready.status, 200)
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    assert.match(metrics, /notify_build_info/)
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
    child.kill('SIGTERM')
    assert.equal(await exited, 0)
    dir.remove()
  })
})

describe('the database URL as a secret', () => {
  test('a PostgreSQL URL may come from NOTIFY_DATABASE_URL_FILE, and one in a config file every user may read is warned about; a sqlite: path is not', () => {
    const dir = tempDir('notify-database-secret-')
    try {
      const url = join(dir.path, 'database-url')
      writeFileSync(url, 'postgres://notify:pw@db.internal/notify\n')
      chmodSync(url, 0o600)
      assert.equal(
        readConfig([], { NOTIFY_DATABASE_URL_FILE: url }).database,
        'postgres://notify:pw@db.internal/notify',
      )
      const file = join(dir.path, 'notify.json')
      writeFileSync(file, JSON.stringify({ database: 'postgres://notify:pw@db.internal/notify' }))
      chmodSync(file, 0o644)
      assert.deepEqual(loadServiceConfig({ argv: ['--config', file], env: {} }).warnings, [
        `${file} holds a secret (database) and every user of this host can read it (mode 0644); chmod o-r ${file}`,
      ])
      writeFileSync(file, JSON.stringify({ database: `sqlite:${join(dir.path, 'n.db')}` }))
      assert.deepEqual(loadServiceConfig({ argv: ['--config', file], env: {} }).warnings, [])
    } finally {
      dir.remove()
    }
  })
})
