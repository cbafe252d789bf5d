/**
 * The app shell's pieces: which config file is read, partial files for admin commands, the
 * listen field, the database opener that refuses a missing SQLite file, the cookie and bearer
 * parsers and terminal escaping (property tests: they read outside input).
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { configEnvName, configFileFor, loadAppConfig } from '../src/cli/config-file.ts'
import { type ConfigError, field } from '../src/config.ts'
import { bearerToken, readCookie } from '../src/credentials.ts'
import { openDatabase } from '../src/db/database.ts'
import type { StartupError } from '../src/errors.ts'

const dir = tempDir('kit-shell-')
after(() => dir.remove())

describe('config file resolution', () => {
  const none = () => false
  test('--config, then $<APP>_CONFIG, then /etc/gatehouse/<app>.json when it exists', () => {
    assert.equal(configEnvName('edgegate'), 'EDGEGATE_CONFIG')
    assert.deepEqual(configFileFor('edgegate', '/x.json', { EDGEGATE_CONFIG: '/y.json' }, none), {
      path: '/x.json',
      required: true,
    })
    assert.deepEqual(configFileFor('edgegate', undefined, { EDGEGATE_CONFIG: '/y.json' }, none), {
      path: '/y.json',
      required: true,
    })
    assert.equal(configFileFor('edgegate', undefined, {}, none), undefined)
    assert.deepEqual(
      configFileFor('edgegate', undefined, {}, (p) => p === '/etc/gatehouse/edgegate.json'),
      { path: '/etc/gatehouse/edgegate.json', required: false },
    )
  })

  test('flags > environment > file > defaults; a named file must exist; partial schemas ignore other keys', () => {
    const schema = {
      database: field.string({ flag: 'database', env: 'APP_DATABASE', default: 'sqlite:/default.db' }),
      listen: field.listen({ flag: 'listen', env: 'APP_LISTEN', default: '127.0.0.1:1' }),
    }
    const file = join(dir.path, 'app.json')
    writeFileSync(file, JSON.stringify({ database: 'sqlite:/file.db', listen: '[::1]:8443', tls_cert: 'x.pem' }))
    const env = { APP_CONFIG: file }
    const partial = { ...schema }
    const fromFile = loadAppConfig('app', { database: partial.database }, { env, partial: true }).config
    assert.equal(fromFile.database, 'sqlite:/file.db')
    assert.equal(
      loadAppConfig(
        'app',
        { database: schema.database },
        { env: { ...env, APP_DATABASE: 'sqlite:/env.db' }, partial: true },
      ).config.database,
      'sqlite:/env.db',
    )
    assert.equal(
      loadAppConfig(
        'app',
        { database: schema.database },
        { env, flags: { database: 'sqlite:/flag.db' }, partial: true },
      ).config.database,
      'sqlite:/flag.db',
    )
    assert.throws(
      () => loadAppConfig('app', schema, { env }),
      (e: ConfigError) => e.lines.some((l) => /tls_cert: unknown key/.test(l)),
      'the full schema still rejects unknown keys',
    )
    assert.throws(
      () => loadAppConfig('app', schema, { config: join(dir.path, 'missing.json'), env: {} }),
      (e: ConfigError) => e.lines.some((l) => /missing\.json/.test(l)),
    )
    assert.equal(loadAppConfig('app', schema, { env: {} }).config.database, 'sqlite:/default.db')
    const viaArgv = loadAppConfig('app', schema, { argv: ['--config', file, '--listen', ':9'], env: {}, partial: true })
    assert.deepEqual(viaArgv.config, { database: 'sqlite:/file.db', listen: ':9' })
    assert.equal(
      loadAppConfig('app', schema, { argv: [`--config=${file}`], env: {}, partial: true }).config.listen,
      '[::1]:8443',
    )
  })

  test('field.listen accepts host:port, [v6]:port and :port; refuses the rest with the key named', () => {
    const schema = { listen: field.listen({ flag: 'listen', default: '127.0.0.1:8080' }) }
    for (const ok of ['127.0.0.1:8443', '[::1]:53', ':8080', 'localhost:1'])
      assert.equal(loadAppConfig('x', schema, { flags: { listen: ok }, env: {} }).config.listen, ok)
    for (const bad of ['8443', '127.0.0.1:99999', '[nope]:1', '127.0.0.1:'])
      assert.throws(
        () => loadAppConfig('x', schema, { flags: { listen: bad }, env: {} }),
        (e: ConfigError) => /^--listen: invalid listen address/.test(e.lines[0]!),
      )
  })
})

describe('openDatabase create option', () => {
  test('create: false refuses a missing SQLite file in one line with the hint, and creates nothing', async () => {
    const path = join(dir.path, 'sub', 'missing.db')
    await assert.rejects(
      openDatabase({ url: `sqlite:${path}`, create: false, missingHint: 'use --database' }),
      (e: StartupError) => e.lines.length === 1 && e.message === `database ${path} does not exist; use --database`,
    )
    assert.equal(existsSync(path), false)
    const created = await openDatabase({ url: `sqlite:${path}` })
    await created.close()
    assert.equal(existsSync(path), true, 'the default creates it (serve)')
    const reopened = await openDatabase({ url: `sqlite:${path}`, create: false })
    await reopened.close()
  })
})

describe('credential parsers', () => {
  test('readCookie', () => {
    assert.equal(readCookie(undefined, 's'), undefined)
    assert.equal(readCookie('a=1; s=abc; s=def', 's'), 'abc')
    assert.equal(readCookie(' s = "quoted" ', 's'), 'quoted')
    assert.equal(readCookie('xs=1; sx=2', 's'), undefined)
    assert.equal(readCookie('s=', 's'), '')
    assert.equal(readCookie('novalue; s=ok', 's'), 'ok')
  })

  test('bearerToken: undefined without a header, null for anything but a well-formed bearer credential', () => {
    assert.equal(bearerToken(undefined), undefined)
    assert.equal(bearerToken('Bearer abc_DEF-1.2~3+4/5=='), 'abc_DEF-1.2~3+4/5==')
    assert.equal(bearerToken('bearer  tok '), 'tok')
    for (const bad of ['', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer a b', 'Bearer a=b', 'Bearertok'])
      assert.equal(bearerToken(bad), null, bad)
  })

  test('properties: never throw; a token or cookie written by us reads back', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (header, name) => {
        bearerToken(header)
        readCookie(header, name)
      }),
    )
    const token = fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,64}=*$/)
    fc.assert(fc.property(token, (t) => bearerToken(`Bearer ${t}`) === t))
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z]{1,8}$/),
        fc.stringMatching(/^[A-Za-z0-9_-]{0,40}$/),
        fc.array(fc.tuple(fc.stringMatching(/^[A-Z]{1,8}$/), fc.stringMatching(/^[a-z0-9]{0,8}$/)), { maxLength: 4 }),
        (name, value, others) => {
          const header = [...others.map(([k, v]) => `${k}=${v}`), `${name}=${value}`].join('; ')
          return readCookie(header, name) === value
        },
      ),
    )
  })
})
