/**
 * The zone-transfer job against real servers: a signing knotd as primary, a knotd secondary
 * transferring from it, `dnsctl refresh zones` as a child process, a differing "primary" for the
 * differential check, and an unreachable primary.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Child, freePort, soaSerial, startChild, tempDir } from '@gatehouse/testkit'
import { HealthService } from '../src/health/service.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')
const ZONE = 'sec.test'
const ZONE_TEXT = `$ORIGIN sec.test.
$TTL 3600
@ SOA ns1 hostmaster 7 3600 900 604800 300
@ NS ns1
ns1 A 192.0.2.1
www A 192.0.2.80
`

async function knotd(dir: string, name: string, body: (port: number, dir: string) => string) {
  const base = join(dir, name)
  for (const d of ['run', 'db', 'zones']) mkdirSync(join(base, d), { recursive: true })
  const port = await freePort()
  const conf = join(base, 'knot.conf')
  writeFileSync(
    conf,
    `server:\n  listen: 127.0.0.1@${port}\n  rundir: ${base}/run\ndatabase:\n  storage: ${base}/db\ncontrol:\n  listen: ${base}/run/knot.sock\nlog:\n  - target: stderr\n    any: info\n${body(port, base)}`,
  )
  const child: Child = await startChild({
    name,
    command: '/usr/sbin/knotd',
    args: ['-c', conf],
    logFile: join(base, 'knotd.log'),
    probe: async () => (await soaSerial(port, ZONE).catch(() => undefined)) !== undefined,
  })
  return { port, socket: `${base}/run/knot.sock`, zonesDir: `${base}/zones`, child }
}

function run(env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'refresh', 'zones', '--json'],
      { env: { PATH: process.env.PATH, ...env } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('zone-transfer refresh with a second knotd as primary', () => {
  const dir = tempDir('dnsctl-xfr-')
  let primary: Awaited<ReturnType<typeof knotd>>
  let secondary: Awaited<ReturnType<typeof knotd>>
  let other: Awaited<ReturnType<typeof knotd>>
  let env: Record<string, string>
  before(async () => {
    primary = await knotd(dir.path, 'primary', (_, base) => {
      writeFileSync(join(base, 'zones', `${ZONE}.zone`), ZONE_TEXT)
      return `acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\ntemplate:\n  - id: default\n    storage: ${base}/zones\n    file: "%s.zone"\n    zonefile-sync: -1\nzone:\n  - domain: ${ZONE}\n    dnssec-signing: on\n    acl: xfr\n`
    })
    secondary = await knotd(
      dir.path,
      'secondary',
      (_, base) =>
        `remote:\n  - id: primary\n    address: 127.0.0.1@${primary.port}\nacl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\ntemplate:\n  - id: default\n    storage: ${base}/zones\n    file: "%s.zone"\n    zonefile-sync: -1\nzone:\n  - domain: ${ZONE}\n    master: primary\n    acl: xfr\n`,
    )
    // A server with different data for the same zone: the differential check must see it.
    other = await knotd(dir.path, 'other', (_, base) => {
      writeFileSync(join(base, 'zones', `${ZONE}.zone`), ZONE_TEXT.replace('www A 192.0.2.80', 'www A 192.0.2.81'))
      return `acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\ntemplate:\n  - id: default\n    storage: ${base}/zones\n    file: "%s.zone"\n    zonefile-sync: -1\nzone:\n  - domain: ${ZONE}\n    acl: xfr\n`
    })
    env = {
      DNSCTL_STATE_DIR: join(dir.path, 'state'),
      DNSCTL_KNOT_SOCKET: secondary.socket,
      DNSCTL_KNOT_ZONES_DIR: secondary.zonesDir,
      DNSCTL_KNOT_ADDRESS: `127.0.0.1:${secondary.port}`,
      DNSCTL_TRANSFER_ZONES: ZONE,
      DNSCTL_TRANSFER_PRIMARY: `127.0.0.1:${primary.port}`,
      DNSCTL_TRANSFER_TIMEOUT: '10s',
    }
  })
  after(async () => {
    await other?.child.stop()
    await secondary?.child.stop()
    await primary?.child.stop()
    dir.remove()
  })
  const health = () => new HealthService(join(dir.path, 'state', 'results'), () => new Date()).status()

  test('in sync: serials equal, no mismatches, the earliest RRSIG expiry recorded, healthy', async () => {
    const res = await run(env)
    assert.equal(res.code, 0, res.stderr + res.stdout)
    const out = JSON.parse(res.stdout)
    assert.equal(out.ok, true)
    const z = out.zones[0]
    assert.equal(z.zone, ZONE)
    assert.equal(z.serial, z.primary_serial)
    assert.equal(z.mismatches, 0)
    assert.ok(z.earliest_rrsig_expiry, 'the signed zone has RRSIGs')
    assert.ok(Date.parse(z.earliest_rrsig_expiry) > Date.now() + 12 * 3600_000)
    assert.equal(out.differential.mismatches, 0)
    const file = JSON.parse(readFileSync(join(dir.path, 'state', 'results', 'zone-transfer.json'), 'utf8'))
    assert.equal(file.earliest_rrsig_expiry, z.earliest_rrsig_expiry)
    const status = await health()
    assert.equal(status.zone_transfer?.ok, true)
    assert.equal(status.differential_check?.mismatches, 0)
    assert.ok(!status.problems.some((p) => /zone|differential|primary-versus/.test(p)), status.problems.join('\n'))
  })

  test('a differing primary: the record-level check reports the differences and health turns false', async () => {
    const res = await run({ ...env, DNSCTL_TRANSFER_PRIMARY: `127.0.0.1:${other.port}` })
    assert.equal(res.code, 1)
    const out = JSON.parse(res.stdout)
    assert.equal(out.ok, true)
    assert.ok(out.differential.mismatches > 0)
    assert.ok(
      out.zones[0].differences.some((d: string) => d.startsWith('primary: www.sec.test A "192.0.2.81"')),
      out.zones[0].differences.join('\n'),
    )
    assert.ok(out.zones[0].differences.some((d: string) => d.startsWith('secondary: www.sec.test A "192.0.2.80"')))
    const status = await health()
    assert.equal(status.healthy, false)
    assert.ok(status.problems.some((p) => /the primary-versus-secondary check found \d+ mismatches/.test(p)))
  })

  test('an unreachable primary: the job fails, keeps last_success_at and leaves the differential file alone', async () => {
    const before = JSON.parse(readFileSync(join(dir.path, 'state', 'results', 'zone-transfer.json'), 'utf8'))
    const res = await run({ ...env, DNSCTL_TRANSFER_PRIMARY: `127.0.0.1:${await freePort()}` })
    assert.equal(res.code, 1)
    const out = JSON.parse(res.stdout)
    assert.equal(out.ok, false)
    assert.match(out.error, /sec\.test: AXFR of sec\.test from 127\.0\.0\.1:\d+: connect ECONNREFUSED/)
    assert.equal(out.last_success_at, before.last_success_at)
    assert.equal(out.differential, null)
    const status = await health()
    assert.ok(status.problems.some((p) => p.startsWith('the last zone transfer failed: ')))
  })
})
