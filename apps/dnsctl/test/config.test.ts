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

  test('a bad value and a cross-field conflict are reported together, not one after the other', () => {
    assert.throws(
      () =>
        loadDnsctlConfig(['--notify-timeout', 'soon'], {
          DNSCTL_HA_ROLE: 'primary',
          DNSCTL_HA_PEER_KNOT: '127.0.0.1:5300',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.deepEqual(err.lines, [
          err.lines[0],
          'ha: if ha.role is primary, metricsListen (--metrics-listen) must be set (the peer checks this node there)',
        ])
        assert.match(err.lines[0]!, /^--notify-timeout: /)
        return true
      },
    )
    // A setting given with a bad value is reported once, as bad, and not again as missing by
    // the rule that needs it; a bad role checks no HA rule at all.
    assert.throws(
      () =>
        loadDnsctlConfig([], {
          DNSCTL_HA_ROLE: 'secondary',
          DNSCTL_HA_PEER_KNOT: 'nonsense',
          DNSCTL_HA_PEER_API: '127.0.0.1:9153',
          DNSCTL_METRICS_LISTEN: '127.0.0.1:9154',
          DNSCTL_AUDIT_RETENTION: '1h',
        }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.lines.length, 2, err.message)
        assert.match(err.lines[0]!, /^DNSCTL_HA_PEER_KNOT: /)
        assert.equal(err.lines[1], 'audit_retention: at least 24h, or 0 to keep every event')
        return true
      },
    )
    assert.throws(
      () => loadDnsctlConfig([], { DNSCTL_HA_ROLE: 'leader' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.lines.length, 1, err.message)
        assert.match(err.lines[0]!, /^DNSCTL_HA_ROLE: /)
        return true
      },
    )
  })

  test('the process: a bad value and a cross-field conflict stop startup with both lines', async () => {
    const r = await runMain(['--resolver-rpz-file', '/tmp/a.rpz', '--verify-timeout', '10'])
    assert.equal(r.code, 1)
    const lines = r.stderr.trim().split('\n')
    assert.equal(lines.length, 2, r.stderr)
    assert.match(lines[0]!, /^dnsctl: --verify-timeout: /)
    assert.match(lines[1]!, /resolver: 1 RPZ files but 0 addresses; give one address per RPZ file$/)
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
