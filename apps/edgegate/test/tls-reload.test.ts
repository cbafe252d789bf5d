/**
 * A renewed certificate without a restart: after SIGHUP (a deploy hook, `systemctl reload`)
 * new connections get the certificate and key the files hold now; a key that does not match
 * leaves the previous certificate in use, says so, and the control plane keeps running. The
 * certificate's expiry is a metric, and one that is near is a warning at start.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { appendFileSync, chmodSync, copyFileSync } from 'node:fs'
import { test } from 'node:test'
import { connect } from 'node:tls'
import { createTestCa, metric, waitFor } from '@gatehouse/testkit'
import { call, newDatabase, startEdgegate } from './helpers.ts'

/** The SHA-256 fingerprint of the certificate a new connection to `port` is given. */
function servedCertificate(port: number, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256)
      socket.end()
    })
    socket.on('error', reject)
  })
}

const fingerprintOf = (cert: Buffer) => new X509Certificate(cert).fingerprint256
const expirySeconds = (cert: Buffer) => Math.floor(new X509Certificate(cert).validToDate.getTime() / 1000)

test('SIGHUP: new connections get the renewed certificate; a mismatched key keeps the previous one', async (t) => {
  const ca = createTestCa()
  // Five days left: a renewal that has failed, as the warning at start says.
  const tls = { ca, server: ca.issueServer(undefined, { days: 5 }) }
  t.after(() => tls.ca.remove())
  chmodSync(tls.server.keyPath, 0o644) // as a careless copy leaves it
  const database = await newDatabase('sqlite', async () => {
    throw new Error('unused')
  })
  const gate = await startEdgegate(database, tls, ['--log-level', 'info'])
  t.after(() => gate.stop())
  assert.equal(await servedCertificate(gate.port, tls.ca.ca), fingerprintOf(tls.server.cert))
  await waitFor('the expiry warning', () =>
    /"days_left":4,"msg":"the TLS certificate \S+ expires in 4 days \([^)]+\): nodes and browsers refuse this server once it expires; renew it, then send SIGHUP to load it"/.test(
      gate.child.log(),
    ),
  )
  await waitFor('the key warning', () =>
    gate.child
      .log()
      .includes(
        `${tls.server.keyPath} holds the TLS private key (--tls-key) and every user of this host can read it (mode 0644)`,
      ),
  )
  const expiry = async () =>
    metric(
      (await call(tls, gate.base, '/metrics')).body as string,
      'edgegate_tls_certificate_expiry_timestamp_seconds',
      {
        use: 'server',
      },
    )
  assert.equal(await expiry(), expirySeconds(tls.server.cert))

  // Renewal: the same paths now hold a new certificate and key.
  const renewed = tls.ca.issueServer()
  copyFileSync(renewed.keyPath, tls.server.keyPath)
  copyFileSync(renewed.certPath, tls.server.certPath)
  assert.equal(await servedCertificate(gate.port, tls.ca.ca), fingerprintOf(tls.server.cert), 'nothing before SIGHUP')
  process.kill(gate.child.pid, 'SIGHUP')
  await waitFor('the renewed certificate served', async () => {
    return (await servedCertificate(gate.port, tls.ca.ca)) === fingerprintOf(renewed.cert)
  })
  // The log line is written after the context is swapped, asynchronously: wait for it too.
  await waitFor('the reload logged', () => /"valid_to":"[^"]+","msg":"TLS certificate reloaded"/.test(gate.child.log()))
  assert.equal(await expiry(), expirySeconds(renewed.cert), 'the metric follows the certificate in use')

  // A half-finished renewal: a new certificate beside the old key.
  const half = tls.ca.issueServer()
  copyFileSync(half.certPath, tls.server.certPath)
  process.kill(gate.child.pid, 'SIGHUP')
  await waitFor('the refusal logged', () =>
    /"reason":"[^"]*","msg":"TLS certificate not reloaded; the previous one stays in use"/.test(gate.child.log()),
  )
  assert.equal(await servedCertificate(gate.port, tls.ca.ca), fingerprintOf(renewed.cert))
  assert.equal(await expiry(), expirySeconds(renewed.cert))
  assert.equal(gate.child.process.exitCode, null, 'still running')
  assert.equal((await call(tls, gate.base, '/healthz')).status, 200)

  // The client CA is watched too, by its certificate that expires first: a bundle that gains
  // one with three days left (an old CA kept during a rotation) is named after SIGHUP.
  const clientCa = async () =>
    metric(
      (await call(tls, gate.base, '/metrics')).body as string,
      'edgegate_tls_certificate_expiry_timestamp_seconds',
      {
        use: 'client_ca',
      },
    )
  assert.equal(await clientCa(), expirySeconds(tls.ca.ca))
  copyFileSync(renewed.certPath, tls.server.certPath)
  const oldCa = tls.ca.issueServer(['old-ca.test'], { days: 3 })
  appendFileSync(tls.ca.caPath, oldCa.cert)
  process.kill(gate.child.pid, 'SIGHUP')
  await waitFor('the client CA warning', () =>
    /"subject":"CN=old-ca\.test","days_left":2,"msg":"the client CA \S+ \(CN=old-ca\.test\) expires in 2 days \([^)]+\): every node certificate it issued is refused once it expires/.test(
      gate.child.log(),
    ),
  )
  assert.equal(await clientCa(), expirySeconds(oldCa.cert))
})
