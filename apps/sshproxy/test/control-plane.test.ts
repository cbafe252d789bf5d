/**
 * Issue 4 end to end with real processes: edgegate (HTTPS, a test CA) + `sshproxy serve` +
 * a real sshd + the real OpenSSH client. An unknown client is refused and observed, the
 * observation reaches the control plane, an administrator approves it there, the gate pulls
 * the decision and the same client gets through; with a bearer token and with mTLS. Deleting
 * that decision on the control plane stops the client again after the gate's next pull. A
 * redirecting control-plane URL is refused while the gate keeps serving on local verdicts,
 * and a trusted range from the control plane lets a client through without a verdict.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { copyFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { requestNoRedirect } from '@gatehouse/kit'
import { createTestCa, freePort, type Sshd, sshClient, startSshd, type TestCa, tempDir } from '@gatehouse/testkit'
import { api, controlPlaneFingerprints, type Edgegate, edgegateCli, edgegateToken, startEdgegate } from './edgegate.ts'
import { cli, type Gate, metric, OPENSSH_FP, readEntries, startGate, waitFor } from './helpers.ts'

let ca: TestCa
let sshd: Sshd

async function controlPlaneFingerprint(eg: Edgegate, admin: string, instance: string, fp: string) {
  return (await controlPlaneFingerprints(eg, admin, instance)).find((f) => f.fingerprint === fp)
}

async function verdict(gate: Gate, fp: string) {
  return (await readEntries(gate.dbPath)).find((e) => e.fingerprint === fp)
}

/** The full round trip: refused and observed, uploaded, approved there by `approve`, pulled, through. */
async function roundTrip(gate: Gate, eg: Edgegate, admin: string, instance: string, approve: () => Promise<void>) {
  const refused = await sshClient({ port: gate.port, key: sshd.key, command: 'echo reached' })
  assert.notEqual(refused.code, 0)
  assert.doesNotMatch(refused.stdout, /reached/)
  const local = await waitFor('the refusal observed locally', () => verdict(gate, OPENSSH_FP))
  assert.equal(local.decided_at, null)
  const remote = await waitFor(
    'the observation on the control plane',
    () => controlPlaneFingerprint(eg, admin, instance, OPENSSH_FP),
    30_000,
  )
  assert.ok(remote.count >= 1)
  assert.deepEqual(remote.ips, ['127.0.0.1'])
  await approve()
  const pulled = await waitFor(
    'the approval pulled by the gate',
    async () => {
      const e = await verdict(gate, OPENSSH_FP)
      return e?.verdict === 'approved' ? e : undefined
    },
    30_000,
  )
  assert.notEqual(pulled.decided_at, null)
  const ok = await sshClient({ port: gate.port, key: sshd.key, command: 'echo through-the-gate' })
  assert.equal(ok.code, 0, ok.stderr)
  assert.equal(ok.stdout.trim(), 'through-the-gate')
  const m = await gate.metrics()
  assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_unknown' }), 1)
  assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'allowed' }), 1)
  assert.ok((metric(m, 'sshproxy_sync_cycles_total', { result: 'ok' }) ?? 0) >= 1)
  assert.ok((metric(m, 'sshproxy_sync_last_success_timestamp_seconds') ?? 0) > 0)
  assert.ok(Math.abs(metric(m, 'sshproxy_control_plane_clock_offset_seconds')!) < 2, 'one clock: no offset')
}

before(async () => {
  ca = createTestCa()
  sshd = await startSshd()
})
after(async () => {
  await sshd?.stop()
  ca?.remove()
})

describe('control plane end to end (edgegate + sshproxy serve + sshd + OpenSSH)', () => {
  let eg: Edgegate
  let admin: string
  before(async () => {
    eg = await startEdgegate(ca)
    admin = await edgegateToken(eg.database, ['admin', 'add', 'admin'])
  })
  after(async () => {
    await eg?.stop()
  })

  test('bearer token: an unknown client is refused, approved on the control plane (admin API), then gets through', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-token'])
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: eg.base, instance_id: 'gate-token', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    await roundTrip(gate, eg, admin, 'gate-token', async () => {
      const put = await api(eg, admin, `/api/decisions/gate-token/${OPENSSH_FP}`, { status: 'approved', label: 'ops' })
      assert.equal(put.status, 200, JSON.stringify(put.body))
    })
    assert.equal((await verdict(gate, OPENSSH_FP))?.label, 'ops')
    await waitFor('sync success logged', () => /control plane sync ok/.test(gate.log()))
  })

  test('mutual TLS: the same round trip with a client certificate, approved with the edgegate CLI', async (t) => {
    const r = await edgegateCli(eg.database, [
      'node',
      'add',
      '--kind',
      'sshgate',
      '--cert-name',
      'gate-mtls',
      'gate-mtls',
    ])
    assert.equal(r.code, 0, r.stderr)
    const cert = ca.issueClient('gate-mtls')
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: {
        url: eg.base,
        instance_id: 'gate-mtls',
        client_cert: cert.certPath,
        client_key: cert.keyPath,
        ca: ca.caPath,
        sync_interval: '1s',
      },
    })
    t.after(() => gate.stop())
    await roundTrip(gate, eg, admin, 'gate-mtls', async () => {
      const a = await edgegateCli(eg.database, ['decision', 'approve', '--instance', 'gate-mtls', OPENSSH_FP])
      assert.equal(a.code, 0, a.stderr)
    })
  })

  // A renewal the control plane already expects (the node is registered by the new certificate's
  // fingerprint): syncs fail with the files the gate read at start, and succeed once SIGHUP has
  // made it read them again. No restart, so no connection is dropped.
  test('SIGHUP: a renewed client certificate is used from the next sync on; its expiry is a metric and a warning', async (t) => {
    // Three days left: the renewal is overdue, as the warning at start says.
    const first = ca.issueClient('gate-renew', { days: 3 })
    const renewed = ca.issueClient('gate-renew')
    const r = await edgegateCli(eg.database, [
      'node',
      'add',
      '--kind',
      'sshgate',
      '--cert-fingerprint',
      new X509Certificate(renewed.cert).fingerprint256,
      'gate-renew',
    ])
    assert.equal(r.code, 0, r.stderr)
    const dir = tempDir('sshproxy-renew-')
    t.after(() => dir.remove())
    const certPath = join(dir.path, 'client.crt')
    const keyPath = join(dir.path, 'client.key')
    copyFileSync(first.certPath, certPath)
    copyFileSync(first.keyPath, keyPath)
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: {
        url: eg.base,
        instance_id: 'gate-renew',
        client_cert: certPath,
        client_key: keyPath,
        ca: ca.caPath,
        sync_interval: '1s',
      },
    })
    t.after(() => gate.stop())
    const expiry = async () =>
      metric(await gate.metrics(), 'sshproxy_tls_certificate_expiry_timestamp_seconds', { use: 'client' })
    const expirySeconds = (cert: Buffer) => Math.floor(new X509Certificate(cert).validToDate.getTime() / 1000)
    assert.equal(await expiry(), expirySeconds(first.cert))
    assert.equal(
      metric(await gate.metrics(), 'sshproxy_tls_certificate_expiry_timestamp_seconds', { use: 'ca' }),
      expirySeconds(ca.ca),
      'the CA the gate verifies the control plane with',
    )
    await waitFor('the expiry warning', () =>
      /"days_left":2,"msg":"the control-plane client certificate \S+ expires in 2 days \([^)]+\): the control plane refuses this node once it expires; renew it, then send SIGHUP to load it"/.test(
        gate.log(),
      ),
    )
    await waitFor('a sync refused for the old certificate', () => /control plane sync failed/.test(gate.log()))
    copyFileSync(renewed.keyPath, keyPath)
    copyFileSync(renewed.certPath, certPath)
    process.kill(gate.child.pid, 'SIGHUP')
    await waitFor('the credentials reloaded', () => /"msg":"control-plane credentials reloaded"/.test(gate.log()))
    await waitFor(
      'a sync with the renewed certificate',
      async () => (metric(await gate.metrics(), 'sshproxy_sync_cycles_total', { result: 'ok' }) ?? 0) >= 1,
      30_000,
    )
    assert.equal(await expiry(), expirySeconds(renewed.cert), 'the metric follows the certificate in use')
    assert.equal(gate.child.process.exitCode, null)
  })

  // `edgegate node rotate-token` ends the old token at once: the gate's syncs fail until it has
  // the new one, which SIGHUP takes from the file the config names. No restart, no dropped client.
  test('SIGHUP: a rotated bearer token is read again from its file and syncs succeed again', async (t) => {
    const first = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-rotate'])
    const dir = tempDir('sshproxy-rotate-')
    t.after(() => dir.remove())
    const tokenFile = join(dir.path, 'token')
    writeFileSync(tokenFile, `${first}\n`, { mode: 0o600 })
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: {
        url: eg.base,
        instance_id: 'gate-rotate',
        token_file: tokenFile,
        ca: ca.caPath,
        sync_interval: '1s',
      },
    })
    t.after(() => gate.stop())
    const ok = async () => metric(await gate.metrics(), 'sshproxy_sync_cycles_total', { result: 'ok' }) ?? 0
    await waitFor('a first sync', async () => (await ok()) >= 1, 30_000)
    const rotated = await edgegateToken(eg.database, ['node', 'rotate-token', 'gate-rotate'])
    await waitFor('a sync refused for the old token', () => /control plane sync failed/.test(gate.log()), 30_000)
    // A file that holds nothing usable keeps the old token, and says why.
    writeFileSync(tokenFile, 'two words\n')
    process.kill(gate.child.pid, 'SIGHUP')
    await waitFor('the refusal logged', () =>
      /"msg":"control-plane credentials not reloaded; the previous ones stay in use"/.test(gate.log()),
    )
    writeFileSync(tokenFile, `${rotated}\n`)
    const before = await ok()
    process.kill(gate.child.pid, 'SIGHUP')
    await waitFor('the token reloaded', () =>
      /"msg":"control-plane token reloaded: the next sync uses the new one"/.test(gate.log()),
    )
    await waitFor('a sync with the new token', async () => (await ok()) > before, 30_000)
    assert.doesNotMatch(gate.log(), new RegExp(rotated), 'the token is never logged')
    assert.equal(gate.child.process.exitCode, null)
  })

  test('a control plane restored from a backup: the gate pulls everything again, drops what was lost, keeps its own verdicts', async (t) => {
    const dir = tempDir('sshproxy-restore-')
    t.after(() => dir.remove())
    const file = join(dir.path, 'edgegate.db')
    const database = `sqlite:${file}`
    assert.equal((await edgegateCli(database, ['migrate'])).code, 0)
    const token = await edgegateToken(database, ['node', 'add', '--kind', 'sshgate', 'gate-heal'])
    const port = await freePort()
    let cp = await startEdgegate(ca, { database, port })
    t.after(() => cp.stop())
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: cp.base, instance_id: 'gate-heal', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((c) => c.repeat(32)) as [string, string, string, string]
    const decide = async (verb: string, fp: string) => {
      const r = await edgegateCli(database, ['decision', verb, '--instance', 'gate-heal', fp])
      assert.equal(r.code, 0, r.stderr)
    }
    const verdicts = async () =>
      Object.fromEntries(
        (await readEntries(gate.dbPath)).map((e) => [e.fingerprint, e.decided_at === null ? 'undecided' : e.verdict]),
      )
    await decide('approve', A)
    await decide('approve', C)
    await waitFor(
      'A and C pulled',
      async () => (await verdicts())[C] === 'approved' && (await verdicts())[A] === 'approved',
    )
    const backup = join(dir.path, 'backup.db')
    const saved = await edgegateCli(database, ['backup', backup])
    assert.equal(saved.code, 0, saved.stderr)
    // After the backup: B blocked, C blocked (both lost with the restore), and the gate's own
    // block of A (its CLI), which the control plane never had.
    await decide('block', B)
    await decide('block', C)
    await waitFor('B and C blocked on the gate', async () => {
      const v = await verdicts()
      return v[B] === 'blocked' && v[C] === 'blocked'
    })
    const local = await cli(['block', '--db', gate.dbPath, A])
    assert.equal(local.code, 0, local.stderr)

    // The restore, as edgegate's README says: stop, the copy in place, no -wal or -shm.
    await cp.stop()
    copyFileSync(backup, file)
    rmSync(`${file}-wal`, { force: true })
    rmSync(`${file}-shm`, { force: true })
    cp = await startEdgegate(ca, { database, port })
    await waitFor('the resync done', () => /"msg":"resync done/.test(gate.log()), 30_000)
    assert.match(gate.log(), /"msg":"the control plane has no decisions as late as this gate's/)
    assert.deepEqual(await verdicts(), { [A]: 'blocked', [B]: 'undecided', [C]: 'approved' })
    assert.equal(metric(await gate.metrics(), 'sshproxy_sync_resync_dropped_total'), 1)
    assert.match(cp.child.log(), /"msg":"node gate-heal has decisions up to \S+Z, later than any in this database/)

    // New decisions flow as before, without another resync.
    await decide('approve', D)
    await waitFor('D pulled', async () => (await verdicts())[D] === 'approved')
    assert.equal(gate.log().match(/"msg":"resync done/g)?.length, 1)
  })

  test('deleting an approval on the control plane stops the client again after the next pull', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-revoke'])
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: eg.base, instance_id: 'gate-revoke', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    await roundTrip(gate, eg, admin, 'gate-revoke', async () => {
      const put = await api(eg, admin, `/api/decisions/gate-revoke/${OPENSSH_FP}`, { status: 'approved', label: 'ops' })
      assert.equal(put.status, 200, JSON.stringify(put.body))
    })
    const approvedAt = (await verdict(gate, OPENSSH_FP))!.decided_at!
    const del = await requestNoRedirect(`${eg.base}/api/decisions/gate-revoke/${OPENSSH_FP}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${admin}` },
      dispatcher: eg.agent,
      accept: () => true,
    })
    assert.equal(del.status, 204, del.body.toString('utf8'))
    assert.equal((await api(eg, admin, `/api/decisions/gate-revoke/${OPENSSH_FP}`)).status, 404)
    const revoked = await waitFor(
      'the deletion pulled by the gate as pending',
      async () => {
        const e = await verdict(gate, OPENSSH_FP)
        return e?.verdict === 'pending' ? e : undefined
      },
      30_000,
    )
    assert.equal(revoked.label, '')
    assert.match(revoked.actor ?? '', /^admin:/)
    assert.ok(revoked.decided_at! > approvedAt, 'the deletion is newer than the approval')
    const stopped = await sshClient({ port: gate.port, key: sshd.key, command: 'echo reached' })
    assert.notEqual(stopped.code, 0)
    assert.doesNotMatch(stopped.stdout, /reached/)
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_pending' }), 1)
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'allowed' }), 1)
  })

  test('an approval made for a while (decision approve --for) reaches the gate with its expiry, which `list` shows', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-for'])
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: eg.base, instance_id: 'gate-for', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    const sent = Date.now()
    await roundTrip(gate, eg, admin, 'gate-for', async () => {
      const a = await edgegateCli(eg.database, [
        'decision',
        'approve',
        '--instance',
        'gate-for',
        '--for',
        '2h',
        OPENSSH_FP,
      ])
      assert.equal(a.code, 0, a.stderr)
    })
    const e = (await verdict(gate, OPENSSH_FP))!
    assert.ok(e.expires_at !== null, 'the expiry is stored with the pulled decision')
    const left = Date.parse(e.expires_at) - sent
    assert.ok(left > 7_000_000 && left <= 7_260_000, `expires about 2 hours after the approval (${e.expires_at})`)
    const list = await cli(['list', '--db', gate.dbPath])
    assert.equal(list.code, 0, list.stderr)
    assert.match(list.stdout, new RegExp(`${OPENSSH_FP}\\s+approved until ${e.expires_at.replace(/\./g, '\\.')}`))
    const json = await cli(['list', '--json', '--db', gate.dbPath])
    assert.equal(JSON.parse(json.stdout)[0].expires_at, e.expires_at)
  })

  test('a gate registered with the wrong kind: each failed sync logs 403 wrong_node_kind naming the kind and the command that shows it', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'websignal', 'gate-kind'])
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: eg.base, instance_id: 'gate-kind', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    const line = await waitFor('the refusal in the log', () =>
      gate
        .log()
        .split('\n')
        .find((l) => l.includes('control plane sync failed')),
    )
    const entry = JSON.parse(line)
    assert.equal(entry.code, 'wrong_node_kind')
    assert.equal(entry.status, 403)
    assert.match(
      entry.msg_detail,
      /node gate-kind is registered as kind websignal; this endpoint is for sshgate or tlsgate nodes \(check with: edgegate node show gate-kind\)/,
    )
    const show = await edgegateCli(eg.database, ['node', 'show', 'gate-kind'])
    assert.equal(show.code, 0, show.stderr)
    assert.match(show.stdout, /^kind:\s+websignal$/m)
  })

  test('a redirecting control-plane URL is refused and logged; the gate keeps serving on local verdicts', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-redirect'])
    const cert = ca.issueServer()
    const redirector: Server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      res.writeHead(307, { location: `${eg.base}${req.url}` })
      res.end()
    })
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r))
    t.after(() => new Promise<void>((r) => redirector.close(() => r())))
    const port = (redirector.address() as { port: number }).port
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: {
        url: `https://127.0.0.1:${port}`,
        instance_id: 'gate-redirect',
        token,
        ca: ca.caPath,
        sync_interval: '1s',
      },
    })
    t.after(() => gate.stop())
    await waitFor('the refusal in the log', () => /redirect_refused/.test(gate.log()))
    await waitFor('local fallback logged', () =>
      /control plane sync failed; serving on local verdicts/.test(gate.log()),
    )
    assert.doesNotMatch(gate.log(), new RegExp(token))
    const m = await gate.metrics()
    assert.ok((metric(m, 'sshproxy_sync_cycles_total', { result: 'failed' }) ?? 0) >= 1)
    assert.equal(metric(m, 'sshproxy_sync_cycles_total', { result: 'ok' }), 0)
    // Local verdicts still apply: unknown refused, approved (by the local CLI) through.
    const refused = await sshClient({ port: gate.port, key: sshd.key, command: 'echo reached' })
    assert.notEqual(refused.code, 0)
    await waitFor('the refusal observed locally', () => verdict(gate, OPENSSH_FP))
    const approve = await cli(['approve', '--db', gate.dbPath, OPENSSH_FP])
    assert.equal(approve.code, 0, approve.stderr)
    const ok = await sshClient({ port: gate.port, key: sshd.key, command: 'echo local-verdict' })
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(ok.stdout.trim(), 'local-verdict')
    // Nothing reached the control plane through the redirect.
    assert.equal(await controlPlaneFingerprint(eg, admin, 'gate-redirect', OPENSSH_FP), undefined)
  })
})

describe('trusted ranges from the control plane', () => {
  let eg: Edgegate
  before(async () => {
    const dir = tempDir('sshproxy-ranges-')
    const file = join(dir.path, 'ranges.txt')
    writeFileSync(file, '# loopback clients are trusted\n127.0.0.0/8\n')
    eg = await startEdgegate(ca, { extra: ['--trusted-ranges-file', file] })
  })
  after(async () => {
    await eg?.stop()
  })

  test('a client in a control-plane trusted range is relayed without a verdict (result bypassed), and still observed', async (t) => {
    const token = await edgegateToken(eg.database, ['node', 'add', '--kind', 'sshgate', 'gate-trusted'])
    const gate = await startGate(sshd.port, [], undefined, {
      control_plane: { url: eg.base, instance_id: 'gate-trusted', token, ca: ca.caPath, sync_interval: '1s' },
    })
    t.after(() => gate.stop())
    await waitFor(
      'the managed range pulled',
      async () => metric(await gate.metrics(), 'sshproxy_bypass_ranges', { source: 'control_plane' }) === 1,
      30_000,
    )
    const ok = await sshClient({ port: gate.port, key: sshd.key, command: 'echo trusted' })
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(ok.stdout.trim(), 'trusted')
    const e = await waitFor('the bypassed client observed', () => verdict(gate, OPENSSH_FP))
    assert.equal(e.decided_at, null, 'no verdict was made')
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'bypassed' }), 1)
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'allowed' }), 0)
    await waitFor('bypass logged', () => /"result":"bypassed"/.test(gate.log()))
  })
})
