/**
 * `edgegate pki`: a CA and certificates made by the commands as printed, used by a real
 * `edgegate serve` (its server certificate and `--client-ca`) and by a node's client
 * certificate; owner-only keys; renewal by `--replace`; bad input refused with one line.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { createTestCa, tempDir } from '@gatehouse/testkit'
import { call, cli, newDatabase, startEdgegate, type Tls } from './helpers.ts'

const sqliteOnly = async () => {
  throw new Error('unused')
}

test('pki init and issue make a CA, a server and a client certificate that serve and a node use', async (t) => {
  const dir = tempDir('edgegate-pki-')
  t.after(() => dir.remove())
  const pki = join(dir.path, 'etc', 'pki')
  const init = await cli(['pki', 'init', pki, '--name', 'Example edge CA'])
  assert.equal(init.code, 0, init.stderr)
  assert.match(init.stdout, /^CA "Example edge CA" created in \S+, valid until 20\d\d-/)
  assert.equal(statSync(pki).mode & 0o777, 0o700)
  assert.equal(statSync(join(dir.path, 'etc')).mode & 0o777, 0o777 & ~process.umask(), 'a parent keeps the umask')
  assert.equal(statSync(join(pki, 'ca.key')).mode & 0o777, 0o600)
  const ca = new X509Certificate(readFileSync(join(pki, 'ca.crt')))
  assert.equal(ca.ca, true)
  assert.equal(ca.subject, 'CN=Example edge CA')
  assert.ok(ca.validToDate.getTime() - Date.now() > 3649 * 86_400_000, 'ten years')

  const server = await cli(['pki', 'issue', pki, '--server', 'localhost', '127.0.0.1', '::1'])
  assert.equal(server.code, 0, server.stderr)
  const client = await cli(['pki', 'issue', pki, '--client', 'edge-1'])
  assert.equal(client.code, 0, client.stderr)
  for (const f of ['server-localhost.key', 'client-edge-1.key'])
    assert.equal(statSync(join(pki, f)).mode & 0o777, 0o600, f)
  const leaf = new X509Certificate(readFileSync(join(pki, 'client-edge-1.crt')))
  assert.equal(leaf.subject, 'CN=edge-1')
  assert.equal(leaf.subjectAltName, 'DNS:edge-1')
  assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey))
  assert.match(
    new X509Certificate(readFileSync(join(pki, 'server-localhost.crt'))).subjectAltName!,
    /DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/,
  )

  // The printed next steps, as printed: the serve flags and the node's config.
  const serveLine = server.stdout.split('\n').find((l) => l.trim().startsWith('edgegate serve'))!
  const flags = serveLine.trim().split(/\s+/).slice(2)
  assert.deepEqual(flags, [
    '--tls-cert',
    join(pki, 'server-localhost.crt'),
    '--tls-key',
    join(pki, 'server-localhost.key'),
    '--client-ca',
    join(pki, 'ca.crt'),
  ])
  const nodeConfig = JSON.parse(client.stdout.match(/"control_plane": (\{.*\})$/m)![1]!) as Record<string, string>
  assert.deepEqual(Object.keys(nodeConfig), ['client_cert', 'client_key', 'ca'])
  const database = await newDatabase('sqlite', sqliteOnly)
  assert.equal((await cli(['migrate'], { EDGEGATE_DATABASE: database })).code, 0)
  const addLine = client.stdout.split('\n').find((l) => l.trim().startsWith('edgegate node add'))!
  const add = await cli(
    addLine
      .trim()
      .split(/\s+/)
      .slice(1)
      .map((a) => (a === '<sshgate|tlsgate|websignal>' ? 'sshgate' : a)),
    { EDGEGATE_DATABASE: database },
  )
  assert.equal(add.code, 0, add.stderr)
  const tls = {
    ca: { ca: readFileSync(nodeConfig.ca!), caPath: nodeConfig.ca! },
    server: { certPath: flags[1]!, keyPath: flags[3]! },
  } as unknown as Tls
  const gate = await startEdgegate(database, tls)
  t.after(() => gate.stop())
  const cert = { cert: readFileSync(nodeConfig.client_cert!), key: readFileSync(nodeConfig.client_key!) }
  const ok = await call(tls, gate.base, '/v1/policy?instance_id=edge-1', { cert: cert as never })
  assert.equal(ok.status, 200, JSON.stringify(ok.body))
  const stranger = createTestCa('Another CA')
  t.after(() => stranger.remove())
  const refused = await call(tls, gate.base, '/v1/policy?instance_id=edge-1', { cert: stranger.issueClient('edge-1') })
  assert.equal(refused.status, 401, 'a certificate of another CA identifies nobody')

  // Renewal: refused over existing files, done with --replace (a new key and serial).
  const again = await cli(['pki', 'issue', pki, '--client', 'edge-1'])
  assert.deepEqual(
    [again.code, again.stderr],
    [
      1,
      `edgegate: ${join(pki, 'client-edge-1.crt')} exists; give --replace to issue a new key and certificate in its place\n`,
    ],
  )
  const renewed = await cli(['pki', 'issue', pki, '--client', 'edge-1', '--replace', '--days', '30'])
  assert.equal(renewed.code, 0, renewed.stderr)
  const next = new X509Certificate(readFileSync(join(pki, 'client-edge-1.crt')))
  assert.notEqual(next.serialNumber, leaf.serialNumber)
  assert.notEqual(readFileSync(join(pki, 'client-edge-1.key'), 'utf8'), cert.key.toString())
  const renewedCall = await call(tls, gate.base, '/v1/policy?instance_id=edge-1', {
    cert: {
      cert: readFileSync(join(pki, 'client-edge-1.crt')),
      key: readFileSync(join(pki, 'client-edge-1.key')),
    } as never,
  })
  assert.equal(renewedCall.status, 200)
  // The folder's certificates, the CA first, then what expires first (the 30-day renewal).
  const listed = await cli(['pki', 'list', pki, '--json'])
  assert.equal(listed.code, 0, listed.stderr)
  assert.deepEqual(
    (JSON.parse(listed.stdout) as Array<{ file: string; use: string; days_left: number }>).map((r) => [
      r.file,
      r.use,
      r.days_left,
    ]),
    [
      ['ca.crt', 'ca', 3649],
      ['client-edge-1.crt', 'client', 29],
      ['server-localhost.crt', 'server', 396],
    ],
  )
  const table = await cli(['pki', 'list', pki])
  assert.match(table.stdout, /^FILE +USE +SUBJECT +EXPIRES +DAYS LEFT\nca\.crt +ca +CN=Example edge CA +\S+Z +3649\n/)
  assert.deepEqual(
    (await cli(['pki', 'init', pki])).stderr,
    `edgegate: ${pki} already holds a CA (ca.key, ca.crt); it is never overwritten\n`,
  )
})

test('pki refuses bad input with one line and leaves nothing behind', async (t) => {
  const dir = tempDir('edgegate-pki-bad-')
  t.after(() => dir.remove())
  const pki = join(dir.path, 'pki')
  const cases: Array<[string[], number, RegExp]> = [
    [['pki', 'issue', pki, '--client', 'edge-1'], 1, /holds no CA \(ca\.key and ca\.crt\): run edgegate pki init/],
    [['pki', 'init', pki, '--days', '0'], 2, /--days must be a whole number of days from 1 to 36500, got "0"/],
    [['pki', 'init', pki, '--name', 'CA $HOME'], 2, /--name must be 1 to 64 letters/],
  ]
  for (const [args, code, message] of cases) {
    const r = await cli(args)
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`)
    assert.match(r.stderr, message)
    assert.equal(r.stderr.split('\n').length, 2, 'one line')
  }
  assert.equal((await cli(['pki', 'init', pki, '--days', '30'])).code, 0)
  const more: Array<[string[], number, RegExp]> = [
    [['pki', 'issue', pki], 2, /give --server NAME\.\.\. .* or --client ID/],
    [['pki', 'issue', pki, '--client', 'a', '--server', 'b'], 2, /one of them/],
    [['pki', 'issue', pki, '--client', 'bad id'], 2, /is not an instance id/],
    [['pki', 'issue', pki, '--server', 'exa mple'], 2, /neither a DNS name nor an IP address/],
    [['pki', 'issue', pki, '--client', 'edge-1'], 1, /the CA expires on \S+, before a 397-day certificate would/],
  ]
  for (const [args, code, message] of more) {
    const r = await cli(args)
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`)
    assert.match(r.stderr, message)
  }
  const { readdirSync } = await import('node:fs')
  assert.deepEqual(readdirSync(pki).sort(), ['ca.crt', 'ca.key'], 'no partial files')
  const short = await cli(['pki', 'issue', pki, '--client', 'edge-1', '--days', '20'])
  assert.equal(short.code, 0, short.stderr)
})

test('the next steps pki prints name edgegate the way it was run (bin/edgegate in a checkout)', async (t) => {
  const dir = tempDir('edgegate-pki-typed-')
  t.after(() => dir.remove())
  const pki = join(dir.path, 'pki')
  const init = await cli(['pki', 'init', pki], { GATEHOUSE_INVOKED_AS: 'bin/edgegate' })
  assert.equal(init.code, 0, init.stderr)
  assert.match(init.stdout, new RegExp(`^ {2}bin/edgegate pki issue ${pki} --server `, 'm'))
  const client = await cli(['pki', 'issue', pki, '--client', 'edge-1'], { GATEHOUSE_INVOKED_AS: 'bin/edgegate' })
  assert.match(
    client.stdout,
    /^ {2}bin\/edgegate node add --kind <sshgate\|tlsgate\|websignal> --cert-name edge-1 edge-1$/m,
  )
  const missing = await cli(['pki', 'issue', join(dir.path, 'none'), '--client', 'edge-1'], {
    GATEHOUSE_INVOKED_AS: 'bin/edgegate',
  })
  assert.match(missing.stderr, /^edgegate: .*: run bin\/edgegate pki init /)
})
