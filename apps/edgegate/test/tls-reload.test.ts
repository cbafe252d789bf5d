/**
 * A renewed certificate without a restart: after SIGHUP (a deploy hook, `systemctl reload`)
 * new connections get the certificate and key the files hold now; a key that does not match
 * leaves the previous certificate in use, says so, and the control plane keeps running.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { copyFileSync } from 'node:fs'
import { test } from 'node:test'
import { connect } from 'node:tls'
import { waitFor } from '@gatehouse/testkit'
import { call, makeTls, newDatabase, startEdgegate } from './helpers.ts'

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

test('SIGHUP: new connections get the renewed certificate; a mismatched key keeps the previous one', async (t) => {
  const tls = makeTls()
  t.after(() => tls.ca.remove())
  const database = await newDatabase('sqlite', async () => {
    throw new Error('unused')
  })
  const gate = await startEdgegate(database, tls, ['--log-level', 'info'])
  t.after(() => gate.stop())
  assert.equal(await servedCertificate(gate.port, tls.ca.ca), fingerprintOf(tls.server.cert))

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

  // A half-finished renewal: a new certificate beside the old key.
  const half = tls.ca.issueServer()
  copyFileSync(half.certPath, tls.server.certPath)
  process.kill(gate.child.pid, 'SIGHUP')
  await waitFor('the refusal logged', () =>
    /"reason":"[^"]*","msg":"TLS certificate not reloaded; the previous one stays in use"/.test(gate.child.log()),
  )
  assert.equal(await servedCertificate(gate.port, tls.ca.ca), fingerprintOf(renewed.cert))
  assert.equal(gate.child.process.exitCode, null, 'still running')
  assert.equal((await call(tls, gate.base, '/healthz')).status, 200)
})
