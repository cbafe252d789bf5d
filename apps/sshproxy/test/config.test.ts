/**
 * `doctor` and the startup path: the strict config file, the control_plane rules (HTTPS only,
 * exactly one auth method, instance_id with url), one clear line per problem and a non-zero
 * exit; doctor never opens the database or binds a port.
 */
import assert from 'node:assert/strict'
import { chmodSync, existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { createTestCa, freePort, tempDir } from '@gatehouse/testkit'
import { cli, cliInProcess } from './helpers.ts'

const dir = tempDir('sshproxy-config-')
after(() => dir.remove())
let n = 0

function configFile(content: unknown): string {
  const path = join(dir.path, `config-${n++}.json`)
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

/** A config file whose control plane uses mutual TLS with these files (`extra` merged in). */
function mtlsConfig(caPath: string, cert: { certPath: string; keyPath: string }, extra: Record<string, string> = {}) {
  return configFile({
    control_plane: {
      url: 'https://cp.example.test',
      instance_id: 'gate-1',
      client_cert: cert.certPath,
      client_key: cert.keyPath,
      ca: caPath,
      ...extra,
    },
  })
}

const route = '127.0.0.1:2222=127.0.0.1:22'
const db = () => join(dir.path, `never-${n++}.db`)

describe('doctor', () => {
  test('summarises a valid configuration without opening the database or binding a port', async () => {
    const dbPath = db()
    const port = await freePort()
    const config = configFile({
      max_fingerprints: -1,
      metrics_listen: `127.0.0.1:${port}`,
      trusted_ranges: ['10.0.0.0/8', '2001:DB8::/32', '192.0.2.7'],
      control_plane: {
        url: 'https://cp.example.test/',
        instance_id: 'gate-1',
        token: 'secret-token-value',
        sync_interval: '45s',
      },
    })
    const r = await cli([
      'doctor',
      '--route',
      route,
      '--route',
      '127.0.0.1:2223=[::1]:22',
      '--db',
      dbPath,
      '--config',
      config,
      '--trusted-range',
      '198.51.100.0/24',
      '--trusted-range',
      '10.0.0.0/8',
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^configuration OK/)
    // Flags and file are merged, canonical, without duplicates.
    assert.match(
      r.stdout,
      /trusted ranges \(bypass\): 198\.51\.100\.0\/24, 10\.0\.0\.0\/8, 2001:db8::\/32, 192\.0\.2\.7\/32 \(plus any from the control plane\)/,
    )
    assert.match(r.stdout, /127\.0\.0\.1:2222 -> 127\.0\.0\.1:22/)
    assert.match(r.stdout, /127\.0\.0\.1:2223 -> \[::1\]:22/)
    assert.match(r.stdout, new RegExp(`metrics: http://127\\.0\\.0\\.1:${port}/metrics`))
    assert.match(r.stdout, /max_fingerprints: unlimited/)
    assert.match(r.stdout, /limits: 1\/s per source IP \(burst 120\), 1024 concurrent connections/)
    assert.match(r.stdout, /control plane: https:\/\/cp\.example\.test as gate-1, auth bearer token, every 45s/)
    assert.doesNotMatch(r.stdout, /secret-token-value/)
    assert.equal(existsSync(dbPath), false)
    // The metrics port was not bound: it is still free.
    const { createServer } = await import('node:net')
    await new Promise<void>((resolve, reject) => {
      const s = createServer().once('error', reject)
      s.listen(port, '127.0.0.1', () => s.close(() => resolve()))
    })
  })

  test('max_fingerprints 0 means 100000; metrics and sync are off unless configured', async () => {
    const r = await cliInProcess([
      'doctor',
      '--route',
      route,
      '--db',
      db(),
      '--config',
      configFile({ max_fingerprints: 0 }),
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /max_fingerprints: 100000/)
    assert.match(r.stdout, /metrics: disabled/)
    assert.match(r.stdout, /control plane: sync disabled/)
  })

  test("the database comes from --db, else the config file's db, else the default", async () => {
    const fromFile = db()
    const config = configFile({ db: fromFile })
    const viaFile = await cliInProcess(['doctor', '--route', route, '--config', config])
    assert.equal(viaFile.code, 0, viaFile.stderr)
    assert.match(viaFile.stdout, new RegExp(`^database: ${fromFile} \\(not opened\\)$`, 'm'))
    const flag = db()
    const viaFlag = await cliInProcess(['doctor', '--route', route, '--config', config, '--db', flag])
    assert.match(viaFlag.stdout, new RegExp(`^database: ${flag} \\(not opened\\)$`, 'm'))
    const empty = await cliInProcess(['doctor', '--route', route, '--config', configFile({ db: '' })])
    assert.equal(empty.code, 1)
    assert.match(empty.stderr, /db: /)
  })

  test('a token in a config file every user may read, or such a client key, is a warning', async () => {
    const tokenConfig = configFile({
      control_plane: { url: 'https://cp.example.test', instance_id: 'gate-1', token: 'secret-token-value' },
    })
    chmodSync(tokenConfig, 0o644)
    const open = await cliInProcess(['doctor', '--route', route, '--db', db(), '--config', tokenConfig])
    assert.equal(open.code, 0, open.stderr)
    assert.match(
      open.stdout,
      new RegExp(
        `^warning: ${tokenConfig} holds a secret \\(control_plane\\.token\\) and every user of this host can read it \\(mode 0644\\); chmod o-r ${tokenConfig}$`,
        'm',
      ),
    )
    assert.doesNotMatch(open.stdout, /secret-token-value/)
    chmodSync(tokenConfig, 0o640)
    const closed = await cliInProcess(['doctor', '--route', route, '--db', db(), '--config', tokenConfig])
    assert.doesNotMatch(closed.stdout, /^warning:/m)

    const ca = createTestCa()
    try {
      const client = ca.issueClient('gate-1')
      chmodSync(client.keyPath, 0o644)
      const key = await cliInProcess([
        'doctor',
        '--route',
        route,
        '--db',
        db(),
        '--config',
        mtlsConfig(ca.caPath, client),
      ])
      assert.equal(key.code, 0, key.stderr)
      assert.match(
        key.stdout,
        /^warning: \S+\.key holds the control-plane client key \(control_plane\.client_key\) and every user/m,
      )
    } finally {
      ca.remove()
    }
  })

  test('mutual TLS needs all three files and they must be readable PEM', async () => {
    const ca = createTestCa()
    const client = ca.issueClient('gate-1')
    const ok = await cliInProcess([
      'doctor',
      '--route',
      route,
      '--config',
      mtlsConfig(ca.caPath, client, { server_name: 'cp.internal' }),
    ])
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stdout, /auth mutual TLS/)
    assert.match(ok.stdout, /^client certificate: valid until \S+Z \(29 days left\)$/m)
    assert.match(ok.stdout, /^control-plane CA: valid until \S+Z \(59 days left\)$/m)
    // A CA bundle counts by its certificate that expires first (here one that already has).
    const staleBundle = join(dir.path, 'stale-bundle.pem')
    writeFileSync(staleBundle, Buffer.concat([ca.ca, ca.issueServer(['old-ca.test'], { days: -1 }).cert]))
    const stale = await cliInProcess(['doctor', '--route', route, '--config', mtlsConfig(staleBundle, client)])
    assert.equal(stale.code, 1)
    assert.match(
      stale.stderr,
      /^sshproxy: control_plane\.ca: CN=old-ca\.test EXPIRED on \S+Z; this node cannot verify the control plane with it$/m,
    )
    const soon = await cliInProcess([
      'doctor',
      '--route',
      route,
      '--config',
      mtlsConfig(ca.caPath, ca.issueClient('gate-1', { days: 5 })),
    ])
    assert.equal(soon.code, 0, soon.stderr)
    assert.match(soon.stdout, /^client certificate: valid until \S+Z \(only 4 days left: renew it\)$/m)
    const expired = await cliInProcess([
      'doctor',
      '--route',
      route,
      '--config',
      mtlsConfig(ca.caPath, ca.issueClient('gate-1', { days: -1 })),
    ])
    assert.equal(expired.code, 1)
    assert.match(
      expired.stderr,
      /^sshproxy: control_plane\.client_cert: EXPIRED on \S+Z; the control plane refuses this node until it is renewed$/m,
    )
    const missing = await cliInProcess([
      'doctor',
      '--route',
      route,
      '--config',
      mtlsConfig(ca.caPath, { certPath: client.certPath, keyPath: join(dir.path, 'nope.key') }),
    ])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /nope\.key cannot be read \(ENOENT\)/)
  })

  const bad: [string, unknown, RegExp][] = [
    [
      'http URL',
      { control_plane: { url: 'http://cp.test', instance_id: 'g', token: 't' } },
      /control_plane\.url: must use https, got http/,
    ],
    [
      'no instance_id',
      { control_plane: { url: 'https://cp.test', token: 't' } },
      /control_plane\.instance_id: required when control_plane\.url is set/,
    ],
    [
      'two auth methods',
      {
        control_plane: {
          url: 'https://cp.test',
          instance_id: 'g',
          token: 't',
          client_cert: '/c',
          client_key: '/k',
          ca: '/a',
        },
      },
      /exactly one auth method/,
    ],
    ['no auth method', { control_plane: { url: 'https://cp.test', instance_id: 'g' } }, /an auth method is required/],
    [
      'partial mTLS',
      { control_plane: { url: 'https://cp.test', instance_id: 'g', client_cert: '/c' } },
      /mutual TLS needs client_cert, client_key and ca \(missing client_key, ca\)/,
    ],
    [
      'fields without url',
      { control_plane: { instance_id: 'g', token: 't' } },
      /control_plane\.url: required when control_plane is configured/,
    ],
    ['unknown key', { max_fingerprints: 5, routes: [] }, /routes: unknown key/],
    ['bad cap', { max_fingerprints: -2 }, /max_fingerprints: must be at least -1/],
    [
      'bad duration',
      { control_plane: { url: 'https://cp.test', instance_id: 'g', token: 't', sync_interval: 30 } },
      /sync_interval: must be a duration string/,
    ],
    [
      'sync_interval over 5 minutes (edgegate would call the gate silent between syncs)',
      { control_plane: { url: 'https://cp.test', instance_id: 'g', token: 't', sync_interval: '10m' } },
      /sync_interval: must be at most 5m/,
    ],
    ['not JSON', '{ nope', /invalid JSON/],
    ['trusted range with host bits', { trusted_ranges: ['10.0.0.1/8'] }, /trusted_ranges: .*host bits set/],
    ['trusted range not a list', { trusted_ranges: '10.0.0.0/8' }, /trusted_ranges: must be an array of strings/],
    ['trusted range not an address', { trusted_ranges: ['intranet'] }, /trusted_ranges: .*intranet/],
  ]
  test('a bad config file stops doctor in its own process with one line and exit 1', async () => {
    const r = await cli(['doctor', '--route', route, '--config', configFile(bad[0]![1])])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, 'sshproxy: control_plane.url: must use https, got http\n')
  })

  test(`rejects ${bad.map((b) => b[0]).join(', ')}: clear lines, exit 1`, async () => {
    for (const [name, content, message] of bad) {
      const r = await cliInProcess(['doctor', '--route', route, '--config', configFile(content)])
      assert.equal(r.code, 1, `${name}: ${r.stdout}`)
      assert.match(r.stderr, message, name)
      for (const line of r.stderr.trim().split('\n')) assert.match(line, /^sshproxy: /)
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
    }
  })

  test('flag problems are all listed at once', async () => {
    const r = await cliInProcess([
      'doctor',
      '--route',
      'nonsense',
      '--handshake-timeout',
      'soon',
      '--max-connections',
      '0',
      '--trusted-range',
      '300.0.0.0/8',
      '--config',
      configFile({}),
    ])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /--route: element 0 "nonsense": must be LISTEN=BACKEND/)
    assert.match(r.stderr, /--handshake-timeout: invalid duration/)
    assert.match(r.stderr, /--trusted-range: element 0 "300\.0\.0\.0\/8"/)
    assert.match(r.stderr, /--max-connections: must be at least 1/)
  })

  test('bad values and rules between settings are named in one run, each problem once', async () => {
    const r = await cliInProcess([
      'doctor',
      '--handshake-timeout',
      'soon',
      '--config',
      configFile({ max_fingerprints: -2, control_plane: { url: 'https://cp.example.test', sync_interval: 'often' } }),
    ])
    assert.equal(r.code, 1)
    assert.deepEqual(r.stderr.trim().split('\n').sort(), [
      'sshproxy: --handshake-timeout: invalid duration "soon" (use e.g. 500ms, 30s, 15m, 12h, 1h30m)',
      'sshproxy: --route: at least one route is required (--route LISTEN=BACKEND)',
      'sshproxy: control_plane.instance_id: required when control_plane.url is set',
      'sshproxy: control_plane.sync_interval: invalid duration "often" (use e.g. 500ms, 30s, 15m, 12h, 1h30m)',
      'sshproxy: control_plane: an auth method is required: token, or client_cert + client_key + ca',
      'sshproxy: max_fingerprints: must be at least -1, got -2',
    ])
    // A refused setting counts as given and is named once: a bad route is not also "required",
    // a refused url not also missing, a refused token still an auth method.
    const refused = await cliInProcess([
      'doctor',
      '--route',
      'nonsense',
      '--config',
      configFile({ control_plane: { url: 'http://cp.example.test', instance_id: 'gate-1', token: '' } }),
    ])
    assert.equal(refused.code, 1)
    const lines = refused.stderr.trim().split('\n')
    assert.equal(lines.length, 3, refused.stderr)
    assert.match(refused.stderr, /--route: element 0 "nonsense"/)
    assert.match(refused.stderr, /control_plane\.url: must use https, got http/)
    assert.match(refused.stderr, /control_plane\.token: /)
  })

  test('a named config file that does not exist stops doctor and serve', async () => {
    const missing = join(dir.path, 'missing.json')
    const results = await Promise.all(
      ['doctor', 'serve'].map((cmd) => cli([cmd, '--route', route, '--db', db(), '--config', missing])),
    )
    for (const r of results) {
      assert.equal(r.code, 1)
      assert.equal(r.stderr.trim(), `sshproxy: config file ${missing}: cannot be read (ENOENT)`)
    }
  })
})

describe('serve startup failures', () => {
  test('no route, an unusable database and a taken port each stop serve with one line', async () => {
    const config = configFile({})
    const noRoute = await cli(['serve', '--db', db(), '--config', config])
    assert.equal(noRoute.code, 1)
    assert.match(noRoute.stderr, /^sshproxy: --route: at least one route is required/)

    const blocker = join(dir.path, 'a-file')
    writeFileSync(blocker, 'x')
    const badDb = await cli(['serve', '--route', route, '--db', join(blocker, 'sub', 'gate.db'), '--config', config])
    assert.equal(badDb.code, 1)
    assert.match(badDb.stderr, /^sshproxy: database .* cannot be opened/)
    assert.equal(badDb.stderr.trim().split('\n').length, 1)

    const { createServer } = await import('node:net')
    const taken = createServer()
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r))
    const port = (taken.address() as { port: number }).port
    const busy = await cli([
      'serve',
      '--route',
      `127.0.0.1:${port}=127.0.0.1:1`,
      '--db',
      db(),
      '--config',
      config,
      '--backend-timeout',
      '200ms',
      '--log-level',
      'silent',
    ])
    taken.close()
    assert.equal(busy.code, 1)
    assert.match(busy.stderr, /^sshproxy: cannot listen: listen EADDRINUSE/)
  })

  test('an unreadable control-plane CA stops serve with one line (before any sync)', async () => {
    const missing = join(dir.path, 'no-such-ca.crt')
    const config = configFile({
      control_plane: { url: 'https://127.0.0.1:1', instance_id: 'g', token: 'secret-token-value', ca: missing },
    })
    const r = await cli([
      'serve',
      '--route',
      '127.0.0.1:0=127.0.0.1:1',
      '--db',
      db(),
      '--config',
      config,
      '--backend-timeout',
      '200ms',
      '--log-level',
      'silent',
    ])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `sshproxy: control plane: control_plane.ca ${missing} cannot be read (ENOENT)\n`)
    assert.doesNotMatch(r.stderr + r.stdout, /secret-token-value/)
  })
})
