import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError } from '@gatehouse/kit'
import { tempDir } from '@gatehouse/testkit'
import { loadDnsctlConfig } from '../src/config.ts'
import { errors } from '../src/errors.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

function runMain(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH, ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('configuration and startup', () => {
  test('defaults: loopback 127.0.0.1:8053, state under ./dnsctl-data', () => {
    const config = loadDnsctlConfig([], {})
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 8053 })
    assert.match(config.database, /^sqlite:.*dnsctl-data\/dnsctl\.db$/)
    assert.equal(config.knot.verifyTimeout, 10_000)
  })

  test('config.example.json loads', () => {
    const config = loadDnsctlConfig(['--config', join(import.meta.dirname, '..', 'config.example.json')], {})
    assert.equal(config.knot.socket, '/run/knot/knot.sock')
    assert.deepEqual(config.notify.replicas, [{ host: '127.0.0.1', port: 5300 }])
  })

  test('access control: a non-loopback listen address is refused unless acknowledged', () => {
    assert.throws(
      () => loadDnsctlConfig(['--listen', '0.0.0.0:8053'], {}),
      (err: unknown) => err instanceof ConfigError && /not a loopback address.*--allow-non-loopback/.test(err.message),
    )
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_LISTEN: '192.0.2.1:8053' }), ConfigError)
    assert.deepEqual(loadDnsctlConfig(['--listen', '[::1]:9000'], {}).listen, { host: '::1', port: 9000 })
    const acknowledged = loadDnsctlConfig(['--listen', '0.0.0.0:8053', '--allow-non-loopback'], {})
    assert.equal(acknowledged.listen.host, '0.0.0.0')
  })

  test('bad values are listed at once, one line each', () => {
    assert.throws(
      () =>
        loadDnsctlConfig(['--verify-timeout', '10'], {
          DNSCTL_DATABASE: 'postgres://x/y',
          DNSCTL_NOTIFY_REPLICAS: '127.0.0.1:53,nonsense',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.lines.length, 3, err.message)
        return true
      },
    )
    assert.throws(() => loadDnsctlConfig(['--no-such-flag'], {}), /unknown flag/)
    assert.throws(
      () => loadDnsctlConfig(['--audit-retention', '1h'], {}),
      /audit_retention: at least 24h, or 0 to keep every event/,
    )
    assert.equal(loadDnsctlConfig(['--audit-retention', '0'], {}).auditRetention, 0)
    assert.throws(
      () => loadDnsctlConfig([], { DNSCTL_FAILPOINTS: 'nowhere' }),
      /DNSCTL_FAILPOINTS: element 0 "nowhere": unknown failpoint/,
    )
  })

  test('the process: refuses a public listen address with one line and exit 1', async () => {
    const r = await runMain(['--listen', '0.0.0.0:8053'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    assert.match(r.stderr, /^dnsctl: listen: 0\.0\.0\.0 is not a loopback address/)
  })

  test('the process: an unreachable knotd stops startup with one line', async () => {
    const dir = tempDir('dnsctl-cfg-')
    try {
      const r = await runMain([
        '--listen',
        '127.0.0.1:0',
        '--state-dir',
        dir.path,
        '--knot-socket',
        join(dir.path, 'no.sock'),
      ])
      assert.equal(r.code, 1)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(r.stderr, /^dnsctl: knotd at .*no\.sock is not usable/)
    } finally {
      dir.remove()
    }
  })

  test('the process: a missing config file stops startup; --help exits 0', async () => {
    const r = await runMain(['--config', '/nonexistent/dnsctl.json'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /config file \/nonexistent\/dnsctl\.json: cannot be read/)
    const help = await runMain(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /dnsctl serve --help/, 'the program help points at the server flags')
    const serveHelp = await runMain(['serve', '--help'])
    assert.equal(serveHelp.code, 0)
    assert.match(serveHelp.stdout, /DNSCTL_KNOT_SOCKET/)
  })

  test('every error code is documented in the README', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
    for (const [key, factory] of Object.entries(errors)) {
      assert.equal(factory.code, key)
      assert.ok(readme.includes(`\`${key}\``), `README.md does not document ${key}`)
    }
  })
})
