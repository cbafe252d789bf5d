/**
 * SMTP with STARTTLS through the gate: a real client (`openssl s_client -starttls smtp`), a
 * small SMTP backend that upgrades with node:tls. The plaintext dialogue is relayed, the
 * ClientHello after `220` fingerprinted; allowed clients finish the TLS session with the
 * backend, blocked ones get the alert; the hourly report counts both.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import { after, before, test } from 'node:test'
import { TLSSocket } from 'node:tls'
import { createTestCa, type TestCa } from '@gatehouse/testkit'
import { setVerdict } from '../src/fingerprints/store.ts'
import { startGate } from './helpers.ts'

let ca: TestCa
let backend: Server
let backendPort: number
let tlsSessions = 0

before(async () => {
  ca = createTestCa()
  const cert = ca.issueServer(['mail.example.test'])
  backend = createServer((plain) => {
    plain.on('error', () => {})
    plain.write('220 mail.example.test ESMTP test\r\n')
    let buffer = ''
    const onPlain = (d: Buffer) => {
      buffer += d.toString('latin1')
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i).trim().toUpperCase()
        buffer = buffer.slice(i + 1)
        if (line.startsWith('EHLO')) plain.write('250-mail.example.test\r\n250 STARTTLS\r\n')
        else if (line === 'STARTTLS') {
          plain.off('data', onPlain)
          plain.write('220 2.0.0 ready to start TLS\r\n')
          const tls = new TLSSocket(plain, { isServer: true, key: cert.key, cert: cert.cert })
          tls.on('error', () => {})
          tls.on('secure', () => tlsSessions++)
          tls.on('data', (x: Buffer) => {
            const text = x.toString('latin1').toUpperCase()
            if (text.includes('EHLO')) tls.write('250 mail.example.test\r\n')
            if (text.includes('QUIT')) tls.end('221 2.0.0 bye\r\n')
          })
          return
        } else if (line === 'QUIT') plain.end('221 bye\r\n')
        else plain.write('502 5.5.2 not implemented\r\n')
      }
    }
    plain.on('data', onPlain)
  })
  backend.listen(0, '127.0.0.1')
  await once(backend, 'listening')
  backendPort = (backend.address() as { port: number }).port
})
after(() => {
  backend?.close()
  ca?.remove()
})

/** openssl s_client -starttls smtp through the gate; resolves with its output once it exits. */
function smtpClient(port: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/openssl', [
      's_client',
      '-starttls',
      'smtp',
      '-connect',
      `127.0.0.1:${port}`,
      '-servername',
      'mail.example.test',
      '-CAfile',
      ca.caPath,
      '-crlf',
      '-ign_eof',
    ])
    let out = ''
    child.stdin.on('error', () => {}) // a refused client's openssl may exit before we write
    child.stdout.on('data', (d) => {
      out += d
      if (/Verify return code/.test(out) && !child.stdin.writableEnded) child.stdin.end('EHLO client.test\nQUIT\n')
    })
    child.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
  })
}

test('STARTTLS: allowed clients reach the backend over TLS; a blocked fingerprint gets the alert; reports count both', async (t) => {
  const g = await startGate(backendPort, {}, 'smtp')
  t.after(() => g.stop())
  const ok = await smtpClient(g.port)
  assert.match(ok, /221 2\.0\.0 bye/, ok)
  assert.equal(tlsSessions, 1)
  const [e] = await g.seen()
  assert.equal(e!.metadata.sni, 'mail.example.test')
  await setVerdict(g.store.db, e!.fingerprint, { verdict: 'blocked', actor: 'test', now: new Date().toISOString() })
  const refused = await smtpClient(g.port)
  assert.match(refused, /alert access denied|alert number 49/i, refused)
  assert.equal(tlsSessions, 1, 'the refused client never reached the backend TLS session')
  const reports = g.gate.smtpReports!.cut(Date.now() + 3_600_000)
  assert.equal(reports.length, 1)
  assert.equal(reports[0]!.listener, g.config.routes[0]!.name.replace('smtp:', ''))
  assert.deepEqual(reports[0]!.counts, { connections: 2, allowed: 1, refused_blocked: 1 })
})

test('bytes after STARTTLS in the same segment (command injection) close the session', async (t) => {
  const g = await startGate(backendPort, {}, 'smtp')
  t.after(() => g.stop())
  const { connect } = await import('node:net')
  const s = connect({ host: '127.0.0.1', port: g.port })
  s.on('error', () => {})
  await once(s, 'data')
  s.write('EHLO x\r\n')
  await once(s, 'data')
  s.write('STARTTLS\r\nMAIL FROM:<evil@example.test>\r\n')
  await once(s, 'close')
  assert.equal(await g.metric('connection_results_total', { result: 'protocol_error' }), 1)
})
