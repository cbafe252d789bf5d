/** Certificate expiry: the gauge, the warning from 14 days before, the error once expired, and doctor's words. */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { after, test } from 'node:test'
import { createTestCa, metric } from '@gatehouse/testkit'
import {
  bundleExpiry,
  certificateExpiresAt,
  certificateValidity,
  watchCertificateExpiry,
} from '../src/certificate-expiry.ts'
import { createMetrics } from '../src/metrics.ts'

const ca = createTestCa()
after(() => ca.remove())
const DAY = 86_400_000

function recorder() {
  const lines: { level: 'warn' | 'error'; fields: Record<string, unknown>; msg: string }[] = []
  return {
    lines,
    logger: {
      warn: (fields: Record<string, unknown>, msg: string) => void lines.push({ level: 'warn', fields, msg }),
      error: (fields: Record<string, unknown>, msg: string) => void lines.push({ level: 'error', fields, msg }),
    } as never,
  }
}

test('a certificate far from expiry: the gauge, no line; nearer: a warning each check; expired: an error', async () => {
  const cert = ca.issueServer(undefined, { days: 30 })
  const expiresAt = certificateExpiresAt(cert.cert)
  assert.equal(expiresAt, new X509Certificate(cert.cert).validToDate.getTime())
  let now = Date.now()
  const metrics = createMetrics('kit_test')
  const { lines, logger } = recorder()
  const watch = watchCertificateExpiry({
    metrics,
    logger,
    use: 'server',
    file: cert.certPath,
    expiresAt: () => expiresAt,
    now: () => now,
  })
  after(() => watch.stop())
  assert.equal(lines.length, 0, 'nothing to say 30 days ahead')
  assert.equal(
    metric(await metrics.registry.metrics(), 'kit_test_tls_certificate_expiry_timestamp_seconds', { use: 'server' }),
    Math.floor(expiresAt / 1000),
  )

  now = expiresAt - 10 * DAY - 1000
  watch.check()
  assert.equal(lines.length, 1)
  assert.equal(lines[0]!.level, 'warn')
  assert.equal(lines[0]!.fields.days_left, 10)
  assert.equal(
    lines[0]!.msg,
    `the TLS certificate ${cert.certPath} expires in 10 days (${new Date(expiresAt).toISOString()}): nodes and browsers refuse this server once it expires; renew it, then send SIGHUP to load it`,
  )
  now = expiresAt - 3600_000
  watch.check()
  assert.match(lines[1]!.msg, /expires within a day/)
  now = expiresAt + 1
  watch.check()
  assert.equal(lines[2]!.level, 'error')
  assert.match(
    lines[2]!.msg,
    /^the TLS certificate \S+ expired on \S+Z: nodes and browsers refuse this server once it expires/,
  )
})

test('a client certificate: its own words; no certificate (a token): no gauge value, no line', async () => {
  const metrics = createMetrics('kit_test')
  const { lines, logger } = recorder()
  let expiresAt: number | undefined
  const watch = watchCertificateExpiry({
    metrics,
    logger,
    use: 'client',
    file: '/etc/gate/client.crt',
    expiresAt: () => expiresAt,
  })
  after(() => watch.stop())
  assert.equal(
    metric(await metrics.registry.metrics(), 'kit_test_tls_certificate_expiry_timestamp_seconds', { use: 'client' }),
    undefined,
  )
  expiresAt = Date.now() + 2 * DAY + 60_000
  watch.check()
  assert.match(
    lines[0]!.msg,
    /^the control-plane client certificate \/etc\/gate\/client\.crt expires in 2 days \(\S+\): the control plane refuses this node once it expires/,
  )
})

test("doctor's words: days left, a warning within 14 days, EXPIRED once expired", () => {
  assert.match(certificateValidity(ca.issueClient('a', { days: 30 }).cert).text, /^valid until \S+Z \(29 days left\)$/)
  assert.match(
    certificateValidity(ca.issueClient('b', { days: 2 }).cert).text,
    /^valid until \S+Z \(only 1 day left: renew it\)$/,
  )
  const expired = certificateValidity(ca.issueClient('c', { days: -1 }).cert)
  assert.equal(expired.expired, true)
  assert.match(expired.text, /^EXPIRED on \S+Z$/)
})

test('a CA bundle counts by its certificate that expires first, named by subject; several watches share one gauge', async () => {
  const soon = ca.issueServer(['old-ca.example'], { days: 5 })
  const bundle = Buffer.concat([ca.ca, soon.cert])
  const first = bundleExpiry(bundle)!
  assert.equal(first.at, certificateExpiresAt(soon.cert))
  assert.equal(first.subject, 'CN=old-ca.example')
  assert.equal(bundleExpiry('no certificate here'), undefined)

  const metrics = createMetrics('kit_test')
  const { lines, logger } = recorder()
  const server = watchCertificateExpiry({
    metrics,
    logger,
    use: 'server',
    file: '/etc/edgegate/tls.crt',
    expiresAt: () => certificateExpiresAt(ca.ca),
  })
  const clientCa = watchCertificateExpiry({
    metrics,
    logger,
    use: 'client_ca',
    file: '/etc/edgegate/nodes-ca.crt',
    expiresAt: () => first.at,
    subject: () => first.subject,
  })
  after(() => {
    server.stop()
    clientCa.stop()
  })
  const text = await metrics.registry.metrics()
  assert.equal(
    metric(text, 'kit_test_tls_certificate_expiry_timestamp_seconds', { use: 'server' }),
    Math.floor(certificateExpiresAt(ca.ca) / 1000),
  )
  assert.equal(
    metric(text, 'kit_test_tls_certificate_expiry_timestamp_seconds', { use: 'client_ca' }),
    Math.floor(first.at / 1000),
  )
  assert.equal(lines.length, 1, 'only the CA within 14 days')
  assert.equal(lines[0]!.fields.subject, 'CN=old-ca.example')
  assert.match(
    lines[0]!.msg,
    /^the client CA \/etc\/edgegate\/nodes-ca\.crt \(CN=old-ca\.example\) expires in 4 days \(\S+Z\): every node certificate it issued is refused once it expires; add a new CA to the bundle, issue the node certificates from it, then send SIGHUP to load the bundle$/,
  )
})
