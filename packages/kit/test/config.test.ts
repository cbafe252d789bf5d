import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, describe, test } from 'node:test'
import { loadWithChecks, SECRET_NOT_READ, settingName } from '../src/config.ts'
import { databaseUrlMayHoldSecret } from '../src/db/url.ts'
import { ConfigError, describeSchema, field, loadConfig, type Schema } from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'kit-config-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
function file(content: string): string {
  const path = join(dir, `f${n++}`)
  writeFileSync(path, content)
  return path
}
function json(value: unknown): string {
  return file(JSON.stringify(value))
}

/** The ConfigError lines of a failing load. */
function problems(fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
    return err.lines
  }
  assert.fail('expected a ConfigError')
}

const schema = {
  listen: field.string({ env: 'APP_LISTEN', flag: 'listen', default: '127.0.0.1:8080' }),
  workers: field.int({ env: 'APP_WORKERS', flag: 'workers', min: 1, max: 64, default: 4 }),
  timeout: field.duration({ env: 'APP_TIMEOUT', flag: 'timeout', default: '30s' }),
  verbose: field.boolean({ env: 'APP_VERBOSE', flag: 'verbose', default: false }),
  allow: field.list({ env: 'APP_ALLOW', flag: 'allow', default: [] as string[] }),
  mode: field.enum(['a', 'b'] as const, { env: 'APP_MODE', flag: 'mode' }),
  token: field.string({ env: 'APP_TOKEN', flag: 'token', secret: true }),
  db: {
    url: field.string({ env: 'APP_DB_URL', flag: 'db-url', default: 'sqlite:app.db' }),
    pool: field.int({ env: 'APP_DB_POOL', default: 10 }),
    password: field.string({ env: 'APP_DB_PASSWORD', secret: true }),
  },
} satisfies Schema

describe('loadConfig precedence', () => {
  test('defaults when nothing is set', () => {
    const { config, sources } = loadConfig(schema, { argv: [], env: {} })
    assert.deepEqual(config, {
      listen: '127.0.0.1:8080',
      workers: 4,
      timeout: 30_000,
      verbose: false,
      allow: [],
      mode: undefined,
      token: undefined,
      db: { url: 'sqlite:app.db', pool: 10, password: undefined },
    })
    assert.equal(sources.listen, 'default')
    assert.equal(sources.token, undefined)
  })

  test('flags > env > file > default', () => {
    const path = json({ listen: 'file:1', workers: 3, timeout: '3s', mode: 'a', db: { pool: 7 } })
    const env = { APP_LISTEN: 'env:1', APP_WORKERS: '2' }
    const { config, sources } = loadConfig(schema, { argv: ['--listen', 'flag:1'], env, file: path })
    assert.equal(config.listen, 'flag:1')
    assert.equal(config.workers, 2)
    assert.equal(config.timeout, 3000)
    assert.equal(config.mode, 'a')
    assert.equal(config.db.pool, 7)
    assert.equal(config.db.url, 'sqlite:app.db')
    assert.deepEqual(sources, {
      listen: 'flag',
      workers: 'env',
      timeout: 'file',
      verbose: 'default',
      allow: 'default',
      mode: 'file',
      'db.url': 'default',
      'db.pool': 'file',
    })
  })

  test('flags given already parsed by a CLI library', () => {
    const { config } = loadConfig(schema, {
      flags: { workers: '9', verbose: true, listen: undefined },
      env: { APP_LISTEN: 'e' },
    })
    assert.equal(config.workers, 9)
    assert.equal(config.verbose, true)
    assert.equal(config.listen, 'e')
    assert.deepEqual(
      problems(() => loadConfig(schema, { flags: { nope: 1 } })),
      ['flag --nope: unknown flag'],
    )
  })
})

describe('loadConfig flags', () => {
  test('--name value, --name=value and -name value', () => {
    const { config } = loadConfig(schema, {
      argv: ['--listen', 'a:1', '--workers=5', '-timeout', '1h30m', '-db-url=postgres://x/y'],
    })
    assert.equal(config.listen, 'a:1')
    assert.equal(config.workers, 5)
    assert.equal(config.timeout, 5_400_000)
    assert.equal(config.db.url, 'postgres://x/y')
  })

  test('a value after = may contain = and start with a dash', () => {
    const { config } = loadConfig(schema, { argv: ['--listen=a=b', '--token', '-x-'] })
    assert.equal(config.listen, 'a=b')
    assert.equal(config.token, '-x-')
  })

  test('boolean flags take no value but accept =false', () => {
    assert.equal(loadConfig(schema, { argv: ['--verbose'] }).config.verbose, true)
    assert.equal(loadConfig(schema, { argv: ['-verbose'] }).config.verbose, true)
    assert.equal(loadConfig(schema, { argv: ['--verbose=false'] }).config.verbose, false)
    assert.equal(loadConfig(schema, { argv: [], env: { APP_VERBOSE: 'yes' } }).config.verbose, true)
    assert.deepEqual(
      problems(() => loadConfig(schema, { argv: ['--verbose=maybe'] })),
      ['--verbose: must be true or false, got "maybe"'],
    )
  })

  test('list flags repeat; env lists are comma-separated; file lists are arrays', () => {
    assert.deepEqual(loadConfig(schema, { argv: ['--allow', 'a', '--allow=b', '-allow', 'c'] }).config.allow, [
      'a',
      'b',
      'c',
    ])
    assert.deepEqual(loadConfig(schema, { env: { APP_ALLOW: 'x, y ,z' } }).config.allow, ['x', 'y', 'z'])
    assert.deepEqual(loadConfig(schema, { env: { APP_ALLOW: '' } }).config.allow, [])
    assert.deepEqual(loadConfig(schema, { file: json({ allow: ['p', 'q'] }) }).config.allow, ['p', 'q'])
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: json({ allow: 'p,q' }) })),
      ['allow: must be an array of strings, got string "p,q"'],
    )
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: json({ allow: ['p', 3] }) })),
      ['allow: element 1 must be a string, got number 3'],
    )
  })

  test('list items are validated by item()', () => {
    const s = { ports: field.list({ flag: 'port', item: (x: string) => field.int({ max: 65535 }).parse(x, 'flag') }) }
    assert.deepEqual(loadConfig(s, { argv: ['--port', '80', '--port', '443'] }).config.ports, [80, 443])
    assert.deepEqual(
      problems(() => loadConfig(s, { argv: ['--port', '80', '--port', '99999'] })),
      ['--port: element 1 "99999": must be at most 65535, got 99999'],
    )
  })

  test('positionals after the flags and after --', () => {
    const a = loadConfig(schema, { argv: ['--workers', '2', 'publish', 'file.zip', '--verbose'] })
    assert.deepEqual(a.positionals, ['publish', 'file.zip', '--verbose'])
    assert.equal(a.config.verbose, false)
    const b = loadConfig(schema, { argv: ['--', '--workers'] })
    assert.deepEqual(b.positionals, ['--workers'])
    assert.deepEqual(loadConfig(schema, { argv: ['-'] }).positionals, ['-'])
  })

  test('unknown flag and a flag without value', () => {
    assert.deepEqual(
      problems(() => loadConfig(schema, { argv: ['--nope', '--workers'] })),
      ['flag --nope: unknown flag', 'flag --workers: needs a value'],
    )
  })
})

describe('loadConfig errors', () => {
  test('every violation at once, each line naming its key', () => {
    const path = json({ workers: 'many', db: { pool: 1.5, bogus: 1 }, extra: true, mode: 'c' })
    const lines = problems(() =>
      loadConfig(schema, {
        argv: ['--timeout', '1d', '--unknown=1'],
        env: { APP_LISTEN: 'ok', APP_DB_URL: 'x', APP_VERBOSE: 'perhaps' },
        file: path,
      }),
    )
    assert.deepEqual(lines.sort(), [
      '--timeout: invalid duration "1d": the largest unit is h, so 1d is 24h',
      'APP_VERBOSE: must be true or false, got "perhaps"',
      'db.bogus: unknown key',
      'db.pool: must be an integer, got number 1.5',
      'extra: unknown key',
      'flag --unknown: unknown flag',
      'mode: must be one of a, b, got "c"',
      'workers: must be an integer, got string "many"',
    ])
  })

  test('ConfigError message joins the lines', () => {
    try {
      loadConfig(schema, { env: { APP_WORKERS: '0', APP_DB_POOL: 'x' } })
      assert.fail('expected failure')
    } catch (err) {
      assert.ok(err instanceof ConfigError)
      assert.equal(err.name, 'ConfigError')
      assert.equal(err.message, err.lines.join('; '))
      assert.deepEqual(err.lines, [
        'APP_WORKERS: must be at least 1, got 0',
        'APP_DB_POOL: must be an integer, got string "x"',
      ])
    }
  })

  test('a section given as a scalar', () => {
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: json({ db: 'sqlite:x' }) })),
      ['db: must be an object, got string "sqlite:x"'],
    )
  })

  test('durations from JSON need units', () => {
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: json({ timeout: 30 }) })),
      ['timeout: must be a duration string with a unit, e.g. "30s"'],
    )
  })

  test('required fields list how to set them', () => {
    const s = {
      key: field.string({ env: 'APP_KEY', flag: 'key', secret: true, required: true }),
      db: { url: field.url({ required: true, protocols: ['postgres:'] }) },
    }
    assert.deepEqual(
      problems(() => loadConfig(s, {})),
      [
        'key: required (set --key or APP_KEY or APP_KEY_FILE or "key" in the config file)',
        'db.url: required (set "db.url" in the config file)',
      ],
    )
    assert.deepEqual(
      problems(() => loadConfig(s, { env: { APP_KEY: 'k' }, file: json({ db: { url: 'http://x' } }) })),
      ['db.url: must use postgres, got http'],
    )
    // A command that reads no config file does not offer one.
    assert.deepEqual(
      problems(() => loadConfig({ key: s.key }, { configFile: false })),
      ['key: required (set --key or APP_KEY or APP_KEY_FILE)'],
    )
  })
})

describe('cross-field rules beside per-field errors', () => {
  const pair = {
    min: field.int({ env: 'APP_MIN', flag: 'min', default: 1 }),
    max: field.int({ env: 'APP_MAX', flag: 'max', default: 10 }),
    workers: field.int({ env: 'APP_WORKERS', min: 1, default: 4 }),
    token: field.string({ env: 'APP_TOKEN', secret: true, minLength: 8 }),
    user: field.string({ env: 'APP_USER' }),
  }
  type Pair = { min: number; max: number; token: string | undefined; user: string | undefined }
  // An app's rules: each skips itself when a setting it reads is bad; "given" counts a bad one.
  function rules({ config, sources }: { config: Pair; sources: Record<string, string> }, invalid: ReadonlySet<string>) {
    const lines: string[] = []
    if (!invalid.has('min') && !invalid.has('max') && config.max < config.min) lines.push('max: at least min')
    const tokenGiven = config.token !== undefined || invalid.has('token')
    if (tokenGiven && config.user === undefined) lines.push('APP_USER: required when APP_TOKEN is set')
    if (lines.length > 0) throw new ConfigError(lines)
    return { ...config, from: sources.max }
  }

  test('a bad setting leaves out only itself: ConfigError.partial holds what loaded and names what did not', () => {
    const path = json({ max: 5, workers: 0 })
    try {
      loadConfig(pair, { argv: ['--min', '7'], env: { APP_TOKEN: 'short' }, file: path })
      assert.fail('expected failure')
    } catch (err) {
      assert.ok(err instanceof ConfigError)
      assert.deepEqual(err.lines, ['workers: must be at least 1, got 0', 'APP_TOKEN: must be at least 8 characters'])
      assert.ok(err.partial)
      assert.deepEqual([...err.partial.invalid].sort(), ['token', 'workers'])
      assert.deepEqual(err.partial.loaded.config, { min: 7, max: 5, user: undefined })
      assert.deepEqual(err.partial.loaded.sources, { min: 'flag', max: 'file' })
      assert.equal(err.partial.loaded.file, path)
    }
  })

  test('loadWithChecks reports the per-field errors and the rules whose settings are good together', () => {
    const path = json({ max: 5, workers: 0 })
    const lines = problems(() =>
      loadWithChecks(() => loadConfig(pair, { argv: ['--min', '7'], env: { APP_TOKEN: 'short' }, file: path }), rules),
    )
    assert.deepEqual(lines, [
      'workers: must be at least 1, got 0',
      'APP_TOKEN: must be at least 8 characters',
      'max: at least min',
      'APP_USER: required when APP_TOKEN is set',
    ])
    // A rule that reads a bad setting is skipped rather than judged on a value that is not there.
    assert.deepEqual(
      problems(() => loadWithChecks(() => loadConfig(pair, { env: { APP_MIN: 'x', APP_MAX: '0' } }), rules)),
      ['APP_MIN: must be an integer, got string "x"'],
    )
    // Only rule problems, and none at all.
    assert.deepEqual(
      problems(() => loadWithChecks(() => loadConfig(pair, { env: { APP_MIN: '3', APP_MAX: '2' } }), rules)),
      ['max: at least min'],
    )
    assert.deepEqual(
      loadWithChecks(() => loadConfig(pair, { env: { APP_MAX: '20' } }), rules),
      { min: 1, max: 20, workers: 4, token: undefined, user: undefined, from: 'env' },
    )
  })

  test('a secret file that cannot be read counts as given but bad', () => {
    const lines = problems(() =>
      loadWithChecks(() => loadConfig(pair, { env: { APP_TOKEN_FILE: join(dir, 'no-such-file') } }), rules),
    )
    assert.deepEqual(lines, [
      `APP_TOKEN_FILE: secret file ${join(dir, 'no-such-file')} cannot be read (ENOENT)`,
      'APP_USER: required when APP_TOKEN is set',
    ])
  })

  test('settingName: a rule names a setting the way it was given, as the loader does; one not given, how to give it', () => {
    const secretFile = join(dir, 'app-token')
    writeFileSync(secretFile, 'longtoken\n')
    const path = json({ max: 5, user: 'ops' })
    const loaded = loadConfig(pair, { argv: ['--min', '7'], env: { APP_TOKEN_FILE: secretFile }, file: path })
    assert.deepEqual(loaded.labels, { min: '--min', max: 'max', token: 'APP_TOKEN_FILE', user: 'user' })
    assert.deepEqual(
      ['min', 'max', 'token', 'user', 'workers'].map((key) => settingName(pair, loaded, key)),
      ['--min', `max (in ${path})`, 'APP_TOKEN_FILE', `user (in ${path})`, 'APP_WORKERS'],
    )
    // Given with a bad value: named as given too, beside the loader's own line.
    const err = (() => {
      try {
        loadConfig(pair, { env: { APP_TOKEN: 'short' } })
      } catch (e) {
        return e as ConfigError
      }
    })()
    assert.equal(settingName(pair, err!.partial!.loaded, 'token'), 'APP_TOKEN')
    assert.throws(() => settingName(pair, loaded, 'nope'), /no setting nope/)
  })

  test('a config file that cannot be parsed is reported alone: its settings are unknown', () => {
    const path = file('{"max": 0,')
    let error: unknown
    try {
      loadConfig(pair, { file: path })
    } catch (err) {
      error = err
    }
    assert.ok(error instanceof ConfigError)
    assert.equal(error.partial, undefined)
    const lines = problems(() =>
      loadWithChecks(() => loadConfig(pair, { file: path, env: { APP_TOKEN: 'longtoken' } }), rules),
    )
    assert.equal(lines.length, 1)
    assert.match(lines[0]!, /^config file .*: invalid JSON/)
  })
})

describe('loadConfig secrets from files', () => {
  test('<VAR>_FILE is read and one trailing newline stripped', () => {
    const { config, sources } = loadConfig(schema, {
      env: { APP_TOKEN_FILE: file('s3cret\n'), APP_DB_PASSWORD_FILE: file('pw\r\n') },
    })
    assert.equal(config.token, 's3cret')
    assert.equal(config.db.password, 'pw')
    assert.equal(sources.token, 'env')
  })

  test('a missing secret file is an error naming the variable', () => {
    const missing = join(dir, 'missing')
    assert.deepEqual(
      problems(() => loadConfig(schema, { env: { APP_TOKEN_FILE: missing } })),
      [`APP_TOKEN_FILE: secret file ${missing} cannot be read (ENOENT)`],
    )
  })

  test("a secret's bad value is not quoted in the error, however it was given", () => {
    const strict = {
      key: field.string({ secret: true, env: 'APP_KEY', pattern: /^[a-f0-9]{8}$/, patternDoc: '8 hex digits' }),
      mode: field.enum(['a', 'b'] as const, { secret: true, env: 'APP_MODE' }),
    }
    const lines = problems(() =>
      loadConfig(strict, { env: { APP_KEY_FILE: file('hunter2-password\n'), APP_MODE: 'topsecret' } }),
    )
    assert.deepEqual(lines, [
      'APP_KEY_FILE: must be 8 hex digits, got (the value, not shown)',
      'APP_MODE: must be one of a, b, got (the value, not shown)',
    ])
    // Not a secret: the value helps and is shown.
    assert.deepEqual(
      problems(() => loadConfig({ k: field.string({ env: 'APP_K', pattern: /^x$/ }) }, { env: { APP_K: 'y' } })),
      ['APP_K: must be of the form /^x$/, got "y"'],
    )
  })

  test('setting both VAR and VAR_FILE is an error', () => {
    assert.deepEqual(
      problems(() => loadConfig(schema, { env: { APP_TOKEN: 'a', APP_TOKEN_FILE: file('b') } })),
      ['APP_TOKEN: set either APP_TOKEN or APP_TOKEN_FILE, not both'],
    )
  })

  test('<key>_file in the JSON file, also nested', () => {
    const path = json({ token_file: file('t0k\n'), db: { password_file: file('dbpw') } })
    const { config, sources } = loadConfig(schema, { file: path })
    assert.equal(config.token, 't0k')
    assert.equal(config.db.password, 'dbpw')
    assert.equal(sources['db.password'], 'file')
  })

  test('<key>_file problems name the key', () => {
    const missing = join(dir, 'nothing-here')
    const lines = problems(() => loadConfig(schema, { file: json({ token_file: 5, db: { password_file: missing } }) }))
    assert.deepEqual(lines, [
      'token_file: must be a file path string',
      `db.password_file: secret file ${missing} cannot be read (ENOENT)`,
    ])
  })

  test('readSecretFiles: false reads no secret file (status commands), and says so in the value', () => {
    const missing = join(dir, 'nothing-here')
    const { config } = loadConfig(schema, {
      file: json({ db: { password_file: missing } }),
      env: { APP_TOKEN_FILE: missing },
      readSecretFiles: false,
    })
    assert.equal(config.token, SECRET_NOT_READ)
    assert.equal(config.db.password, SECRET_NOT_READ)
  })

  test('_file is not accepted for fields that are not secret', () => {
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: json({ listen_file: file('x') }) })),
      ['listen_file: unknown key'],
    )
    // Nor <VAR>_FILE: the variable is simply not read.
    assert.equal(loadConfig(schema, { env: { APP_LISTEN_FILE: file('x') } }).config.listen, '127.0.0.1:8080')
  })
})

describe('loadConfig: a secret every user of the host may read', () => {
  const withMode = (path: string, mode: number) => {
    chmodSync(path, mode)
    return path
  }

  test('a secret file readable by others is a warning naming it; owner or group only is not', () => {
    const open = withMode(file('s3cret\n'), 0o644)
    const { config, warnings } = loadConfig(schema, { env: { APP_TOKEN_FILE: open } })
    assert.equal(config.token, 's3cret', 'still used: a warning, not a refusal')
    assert.deepEqual(warnings, [
      `${open} holds a secret (APP_TOKEN_FILE) and every user of this host can read it (mode 0644); chmod o-r ${open}`,
    ])
    for (const mode of [0o600, 0o640]) {
      assert.deepEqual(loadConfig(schema, { env: { APP_TOKEN_FILE: withMode(file('x'), mode) } }).warnings, [])
    }
    const nested = withMode(file('pw'), 0o604)
    assert.match(
      loadConfig(schema, { file: withMode(json({ db: { password_file: nested } }), 0o600) }).warnings.join('\n'),
      /holds a secret \(db\.password_file\) .*\(mode 0604\)/,
    )
  })

  test('a config file holding a secret inline and readable by others is a warning naming the keys', () => {
    const config = withMode(json({ token: 't0k', db: { password: 'pw' }, listen: '127.0.0.1:1' }), 0o644)
    assert.deepEqual(loadConfig(schema, { file: config }).warnings, [
      `${config} holds a secret (token, db.password) and every user of this host can read it (mode 0644); chmod o-r ${config}`,
    ])
    assert.deepEqual(loadConfig(schema, { file: withMode(json({ token: 't0k' }), 0o640) }).warnings, [])
    assert.deepEqual(
      loadConfig(schema, { file: withMode(json({ listen: '127.0.0.1:1' }), 0o644) }).warnings,
      [],
      'no secret in it',
    )
    assert.deepEqual(
      loadConfig(schema, { file: config, env: { APP_TOKEN: 'from-env' } }).warnings,
      loadConfig(schema, { file: config }).warnings,
      'the file holds the token even when the environment overrides it',
    )
  })

  test('a field whose function says which values are secret: only those are warned about and hidden', () => {
    const dbSchema = {
      database: field.string({ env: 'APP_DATABASE', secret: databaseUrlMayHoldSecret }),
      port: field.string({ env: 'APP_PORT', pattern: /^\d+$/, secret: databaseUrlMayHoldSecret }),
    }
    const sqlite = withMode(json({ database: 'sqlite:/var/lib/app/app.db' }), 0o644)
    assert.deepEqual(loadConfig(dbSchema, { file: sqlite }).warnings, [], 'a SQLite path is no secret')
    const pg = withMode(json({ database: 'postgres://app:pw@db/app' }), 0o644)
    assert.deepEqual(loadConfig(dbSchema, { file: pg }).warnings, [
      `${pg} holds a secret (database) and every user of this host can read it (mode 0644); chmod o-r ${pg}`,
    ])
    // A refused value is quoted in its error only when it is no secret.
    const shown = problems(() => loadConfig(dbSchema, { file: json({ port: 'sqlite:x' }) }))
    assert.match(shown.join('\n'), /"sqlite:x"/)
    const hidden = problems(() => loadConfig(dbSchema, { file: json({ port: 'postgres://app:pw@db' }) }))
    assert.doesNotMatch(hidden.join('\n'), /pw@db/)
    assert.equal(
      loadConfig(dbSchema, { env: { APP_DATABASE_FILE: withMode(file('sqlite:/a.db'), 0o600) } }).config.database,
      'sqlite:/a.db',
      '_FILE still accepted',
    )
  })
})

describe('loadConfig JSON file', () => {
  test('missing file: an error when required, empty when optional', () => {
    const missing = join(dir, 'no-config.json')
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: missing })),
      [`config file ${missing}: cannot be read (ENOENT)`],
    )
    assert.equal(loadConfig(schema, { file: missing, fileRequired: false }).config.workers, 4)
  })

  test('invalid JSON and non-object JSON', () => {
    const bad = file('{"listen": ')
    const lines = problems(() => loadConfig(schema, { file: bad }))
    assert.equal(lines.length, 1)
    assert.match(lines[0]!, new RegExp(`^config file ${bad}: invalid JSON \\(`))
    const arr = json([1])
    assert.deepEqual(
      problems(() => loadConfig(schema, { file: arr })),
      [`config file ${arr}: must hold a JSON object`],
    )
  })
})

describe('fields', () => {
  test('bytes, number, url and custom', () => {
    const s = {
      size: field.bytes({ env: 'S', max: 1024 ** 3 }),
      ratio: field.number({ env: 'R', min: 0, max: 1 }),
      hook: field.url({ env: 'U', protocols: ['https:'] }),
      odd: field.custom(
        (raw) => {
          const v = Number(raw)
          if (v % 2 !== 1) throw new Error('must be odd')
          return v
        },
        { env: 'O' },
      ),
    }
    const { config } = loadConfig(s, { env: { S: '25MiB', R: '0.5', U: 'https://x.test/h', O: '3' } })
    assert.deepEqual(config, { size: 26_214_400, ratio: 0.5, hook: 'https://x.test/h', odd: 3 })
    assert.deepEqual(
      problems(() => loadConfig(s, { env: { S: '2GiB', R: '', U: 'nope', O: '2' } })),
      [
        'S: must be at most 1073741824, got 2147483648',
        'R: must be a number, got string ""',
        'U: must be an absolute URL, got "nope"',
        'O: must be odd',
      ],
    )
  })

  test('string pattern and minLength', () => {
    const s = { name: field.string({ env: 'N', pattern: /^[a-z]+$/, patternDoc: 'lowercase letters', minLength: 2 }) }
    assert.deepEqual(
      problems(() => loadConfig(s, { env: { N: 'A' } })),
      ['N: must be at least 2 characters'],
    )
    assert.deepEqual(
      problems(() => loadConfig(s, { env: { N: 'AB' } })),
      ['N: must be lowercase letters, got "AB"'],
    )
  })

  test('a bad env name is a TypeError at definition', () => {
    assert.throws(() => field.string({ env: 'lower' }), TypeError)
  })

  test('describeSchema names flags, env vars and defaults', () => {
    const text = describeSchema(schema).join('\n')
    assert.match(text, /--listen, \$APP_LISTEN, listen \(default 127\.0\.0\.1:8080\)/)
    assert.match(text, /\$APP_TOKEN \/ \$APP_TOKEN_FILE/)
    assert.match(text, /db\.pool \(default 10\)/)
  })
})

describe('a program using runMain + loadConfig', () => {
  test('exits non-zero with one stderr line per problem and no stack trace', () => {
    const kit = resolve(import.meta.dirname, '../src/index.ts')
    const script = join(dir, 'main.ts')
    writeFileSync(
      script,
      `import { field, loadConfig, runMain } from ${JSON.stringify(kit)}
const schema = {
  port: field.int({ flag: 'port', env: 'DEMO_PORT', max: 65535 }),
  timeout: field.duration({ flag: 'timeout', env: 'DEMO_TIMEOUT' }),
  key: field.string({ env: 'DEMO_KEY', required: true }),
}
await runMain({ name: 'demo' }, async () => {
  loadConfig(schema, { argv: process.argv.slice(2), env: process.env })
  process.stdout.write('started\\n')
  return undefined
})
`,
    )
    const res = spawnSync(process.execPath, [script, '--port', '70000', '--bogus'], {
      env: { PATH: process.env.PATH, DEMO_TIMEOUT: '1m1h' },
      encoding: 'utf8',
    })
    assert.equal(res.status, 1, res.stderr)
    assert.equal(res.stdout, '')
    const lines = res.stderr.trimEnd().split('\n')
    assert.deepEqual(lines, [
      'demo: flag --bogus: unknown flag',
      'demo: --port: must be at most 65535, got 70000',
      'demo: DEMO_TIMEOUT: invalid duration "1m1h": units must go from largest to smallest, once each',
      'demo: key: required (set DEMO_KEY or "key" in the config file)',
    ])
    assert.doesNotMatch(res.stderr, /\n\s+at /)

    const ok = spawnSync(process.execPath, [script, '--port=80'], {
      env: { PATH: process.env.PATH, DEMO_KEY: 'k' },
      encoding: 'utf8',
    })
    assert.equal(ok.status, 0, ok.stderr)
    assert.equal(ok.stdout, 'started\n')
  })
})
