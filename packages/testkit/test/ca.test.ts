import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { createServer, request } from 'node:https'
import { after, test } from 'node:test'
import { createTestCa } from '../src/index.ts'

test('createTestCa issues server and client certificates that verify for mTLS', async () => {
  const ca = createTestCa()
  after(() => ca.remove())
  const server = ca.issueServer()
  const client = ca.issueClient('gate-1.test')
  const cert = new X509Certificate(client.cert)
  assert.ok(cert.verify(new X509Certificate(ca.ca).publicKey))
  assert.match(cert.subject, /CN=gate-1\.test/)
  assert.match(client.fingerprint, /^[0-9a-f]{64}$/)

  const srv = createServer(
    { cert: server.cert, key: server.key, ca: ca.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate()
      res.end(peer.subject.CN)
    },
  )
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  after(() => srv.close())
  const { port } = srv.address() as { port: number }
  const get = (opts: object) =>
    new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', ca: ca.ca, ...opts }, (res) => {
        let body = ''
        res.on('data', (d) => {
          body += d
        })
        res.on('end', () => resolve(body))
      })
      req.on('error', reject)
      req.end()
    })
  assert.equal(await get({ cert: client.cert, key: client.key }), 'gate-1.test')
  await assert.rejects(get({}), /certificate|socket hang up|ECONNRESET|alert/i)
})
