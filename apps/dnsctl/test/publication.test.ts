import assert from 'node:assert/strict'
import { createSocket } from 'node:dgram'
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Knot, soaSerial, startKnot, tempDir } from '@gatehouse/testkit'
import dnsPacket from 'dns-packet'
import { type Harness, json, startHarness, ZONE, zoneText } from './helpers.ts'
import { type ControlProxy, startControlProxy } from './knot-control-proxy.ts'

/**
 * A knotc in front of the real one, and a proxy in front of knotd's control socket (the two
 * process boundaries the pipeline talks to), that fail on demand, to drive the rollback paths
 * against the real knotd. `fail-reload` and `skip-reload` apply to both ways of loading a
 * change: a reload, and a zone transaction's commit (refused, or answered OK without
 * committing); `fail-transaction` refuses the commit alone; `unreachable` fails every knotc run
 * the way a stopped knotd does.
 */
function faultyKnotc(
  dir: string,
  proxy: ControlProxy,
): {
  path: string
  set(flag: 'fail-reload' | 'skip-reload' | 'fail-commit' | 'fail-transaction' | 'unreachable', on: boolean): void
} {
  const path = join(dir, 'knotc')
  writeFileSync(
    path,
    `#!/bin/sh
[ -e "${dir}/unreachable" ] && { echo "error: failed to connect to socket '${proxy.path}' (connection refused)" >&2; exit 1; }
for a in "$@"; do
  case "$a" in
    zone-reload) [ -e "${dir}/fail-reload" ] && { echo "error: simulated reload failure" >&2; exit 1; }
                 [ -e "${dir}/skip-reload" ] && exit 0 ;;
    conf-commit) [ -e "${dir}/fail-commit" ] && { echo "error: simulated commit failure" >&2; exit 1; } ;;
  esac
done
exec /usr/sbin/knotc "$@"
`,
  )
  chmodSync(path, 0o755)
  return {
    path,
    set(flag, on) {
      if (flag !== 'fail-transaction') {
        if (on) writeFileSync(join(dir, flag), '')
        else rmSync(join(dir, flag), { force: true })
      }
      if (flag !== 'fail-commit' && flag !== 'unreachable')
        proxy.mode = !on ? 'pass' : flag === 'skip-reload' ? 'skip' : 'fail'
    },
  }
}

/**
 * A replica that acknowledges NOTIFY messages. Like a real secondary it asks the primary for
 * the SOA when notified, and records what it saw: the NOTIFY must come after the authority
 * serves the change.
 */
async function startReplica(primaryPort: () => number): Promise<{
  port: number
  received: { zone: string; opcode: string; servedSerial: number | undefined }[]
  close(): void
}> {
  const socket = createSocket('udp4')
  const received: { zone: string; opcode: string; servedSerial: number | undefined }[] = []
  socket.on('message', async (msg, rinfo) => {
    const q = dnsPacket.decode(msg) as dnsPacket.DecodedPacket & { opcode?: string }
    const zone = q.questions?.[0]?.name ?? ''
    received.push({ zone, opcode: q.opcode ?? '', servedSerial: await soaSerial(primaryPort(), zone) })
    const flags = (4 << 11) | dnsPacket.AUTHORITATIVE_ANSWER
    socket.send(
      dnsPacket.encode({ type: 'response', id: q.id, flags, questions: q.questions }),
      rinfo.port,
      rinfo.address,
    )
  })
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r))
  return { port: (socket.address() as { port: number }).port, received, close: () => socket.close() }
}

describe('publication pipeline', () => {
  let knot: Knot
  let h: Harness
  let fault: ReturnType<typeof faultyKnotc>
  let proxy: ControlProxy
  let replica: Awaited<ReturnType<typeof startReplica>>
  const dir = tempDir('dnsctl-fault-')
  let silentPort: number

  before(async () => {
    knot = await startKnot({ zones: { 'adopt.test': zoneText(3).replace('example.test.', 'adopt.test.') } })
    proxy = await startControlProxy(knot.controlSocket, dir.path)
    fault = faultyKnotc(dir.path, proxy)
    replica = await startReplica(() => knot.port)
    // A bound socket that never answers: its NOTIFY times out.
    const silent = createSocket('udp4')
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r))
    silentPort = (silent.address() as { port: number }).port
    after(() => silent.close())
    h = await startHarness({
      knot,
      env: {
        DNSCTL_KNOTC: fault.path,
        DNSCTL_KNOT_SOCKET: proxy.path,
        DNSCTL_NOTIFY_REPLICAS: `127.0.0.1:${replica.port}`,
        DNSCTL_VERIFY_TIMEOUT: '3s',
      },
    })
  })
  after(async () => {
    await h.close()
    await proxy.close()
    await knot.stop()
    replica.close()
    dir.remove()
  })

  async function current(zone = ZONE) {
    return json(await h.call('GET', `/v1/zones/${zone}/rrsets`))
  }

  test('create sends NOTIFY to the replicas after the authority serves the zone', async () => {
    const res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(10) })
    const body = await json(res)
    assert.equal(res.status, 201, JSON.stringify(body))
    assert.deepEqual(body.warnings, [])
    assert.deepEqual(replica.received, [{ zone: ZONE, opcode: 'NOTIFY', servedSerial: 10 }])
    assert.equal(await knot.soaSerial(ZONE), 10)
  })

  test('dry runs validate and change nothing', async () => {
    const before = await current()
    let res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { dry_run: true, changes: [{ action: 'upsert', name: 'dry', type: 'A', ttl: 60, records: ['192.0.2.99'] }] },
      { 'if-match': `"${before.revision}"` },
    )
    const body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.equal(body.dry_run, true)
    assert.equal(body.serial, before.serial + 1)
    assert.equal(body.revision, before.revision)
    assert.deepEqual(await current(), before)
    assert.equal(await knot.soaSerial(ZONE), before.serial)
    res = await h.call('PUT', '/v1/zones/dry.test', {
      role: 'primary',
      zone_text: zoneText().replaceAll('example.test', 'dry.test'),
      dry_run: true,
    })
    assert.equal(res.status, 200)
    assert.equal((await json(res)).dry_run, true)
    assert.equal((await h.call('GET', '/v1/zones/dry.test/rrsets')).status, 404)
    assert.equal(await knot.soaSerial('dry.test'), undefined)
  })

  test('racing writers with the same revision: exactly one wins, the other gets 412', async () => {
    const { revision, serial } = await current()
    const post = (ip: string) =>
      h.call(
        'POST',
        `/v1/zones/${ZONE}/changes`,
        { changes: [{ action: 'upsert', name: 'race', type: 'A', ttl: 60, records: [ip] }] },
        { 'if-match': `"${revision}"` },
      )
    const results = await Promise.all([post('192.0.2.1'), post('192.0.2.2'), post('192.0.2.3')])
    const statuses = results.map((r) => r.status).sort()
    assert.deepEqual(statuses, [200, 412, 412])
    assert.equal(await knot.soaSerial(ZONE), serial + 1)
  })

  test('import over an existing zone needs its revision and never lowers the serial', async () => {
    const before = await current()
    let res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(1) })
    assert.equal(res.status, 428)
    res = await h.call(
      'PUT',
      `/v1/zones/${ZONE}`,
      { role: 'primary', zone_text: zoneText(1) },
      { 'if-match': `"${before.revision}"` },
    )
    const body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.equal(body.serial, before.serial + 1)
    assert.equal(await knot.soaSerial(ZONE), before.serial + 1)
    assert.equal(
      (await current()).rrsets.some((s: { name: string }) => s.name === 'race'),
      false,
    )
  })

  test('a reload Knot refuses is rolled back: prior file, prior serial, audit rolled_back', async () => {
    const before = await current()
    const fileBefore = readFileSync(join(knot.zonesDir, `${ZONE}.zone`), 'utf8')
    fault.set('fail-reload', true)
    try {
      const res = await h.call(
        'POST',
        `/v1/zones/${ZONE}/changes`,
        { changes: [{ action: 'upsert', name: 'fail', type: 'A', ttl: 60, records: ['192.0.2.50'] }] },
        { 'if-match': `"${before.revision}"`, 'x-dns-actor': 'bob' },
      )
      const body = await json(res)
      assert.equal(res.status, 503, JSON.stringify(body))
      assert.equal(body.error.code, 'publication_failed')
      assert.match(body.error.message, /rolled back: .*simulated reload failure/)
    } finally {
      fault.set('fail-reload', false)
    }
    assert.deepEqual(await current(), before)
    assert.equal(readFileSync(join(knot.zonesDir, `${ZONE}.zone`), 'utf8'), fileBefore)
    assert.equal(await knot.soaSerial(ZONE), before.serial)
    const audit = await json(await h.call('GET', `/v1/zones/${ZONE}/audit`))
    assert.equal(audit.events[0].outcome, 'rolled_back')
    assert.equal(audit.events[0].actor, 'bob')
    const history = await json(await h.call('GET', `/v1/zones/${ZONE}/history`))
    assert.equal(history.history[0].revision, before.revision)
  })

  test('a zone transaction Knot refuses falls back to reloading the file, and the change commits', async () => {
    const before = await current()
    fault.set('fail-transaction', true)
    let res: Response
    try {
      res = await h.call(
        'POST',
        `/v1/zones/${ZONE}/changes`,
        { changes: [{ action: 'upsert', name: 'fallback', type: 'A', ttl: 60, records: ['192.0.2.52'] }] },
        { 'if-match': `"${before.revision}"` },
      )
    } finally {
      fault.set('fail-transaction', false)
    }
    const body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.equal(await knot.soaSerial(ZONE), body.serial)
    assert.match(await knot.kdig('fallback.example.test', 'A', '+short'), /192\.0\.2\.52/)
    const audit = await json(await h.call('GET', `/v1/zones/${ZONE}/audit`))
    assert.equal(audit.events[0].outcome, 'committed')
  })

  test('a serial the authority never serves is rolled back after the verification deadline', async () => {
    const before = await current()
    fault.set('skip-reload', true)
    let res: Response
    try {
      res = await h.call(
        'POST',
        `/v1/zones/${ZONE}/changes`,
        { changes: [{ action: 'upsert', name: 'late', type: 'A', ttl: 60, records: ['192.0.2.51'] }] },
        { 'if-match': `"${before.revision}"` },
      )
    } finally {
      fault.set('skip-reload', false)
    }
    const body = await json(res)
    assert.equal(res.status, 503)
    assert.match(body.error.message, /did not serve serial/)
    assert.deepEqual(await current(), before)
    assert.equal(await knot.soaSerial(ZONE), before.serial)
  })

  test('a zone create Knot refuses is rolled back completely', async () => {
    fault.set('fail-commit', true)
    let res: Response
    try {
      res = await h.call('PUT', '/v1/zones/broken.test', {
        role: 'primary',
        zone_text: zoneText().replaceAll('example.test', 'broken.test'),
      })
    } finally {
      fault.set('fail-commit', false)
    }
    assert.equal(res.status, 503)
    assert.equal((await json(res)).error.code, 'publication_failed')
    assert.equal((await h.call('GET', '/v1/zones/broken.test/rrsets')).status, 404)
    assert.throws(() => readFileSync(join(knot.zonesDir, 'broken.test.zone')))
    assert.equal(await knot.soaSerial('broken.test'), undefined)
    assert.ok(!(await knot.knotc('conf-read', 'zone.domain')).includes('broken.test'))
  })

  test('a zone create while knotd does not answer its control socket is 503 publication_failed, and nothing is left', async () => {
    fault.set('unreachable', true)
    let res: Response
    try {
      res = await h.call('PUT', '/v1/zones/unreached.test', {
        role: 'primary',
        zone_text: zoneText().replaceAll('example.test', 'unreached.test'),
      })
    } finally {
      fault.set('unreachable', false)
    }
    const body = await json(res)
    assert.equal(res.status, 503, JSON.stringify(body))
    assert.equal(body.error.code, 'publication_failed')
    assert.match(body.error.message, /unreached\.test.*failed to connect to socket .*connection refused/)
    assert.equal((await h.call('GET', '/v1/zones/unreached.test/rrsets')).status, 404)
    assert.throws(() => readFileSync(join(knot.zonesDir, 'unreached.test.zone')))
    assert.deepEqual(readdirSync(h.config.journalDir), [])
    // Once knotd answers again the same request creates the zone.
    res = await h.call('PUT', '/v1/zones/unreached.test', {
      role: 'primary',
      zone_text: zoneText().replaceAll('example.test', 'unreached.test'),
    })
    assert.equal(res.status, 201, await res.clone().text())
    assert.equal(await knot.soaSerial('unreached.test'), 1)
  })

  test('reconciliation puts back zones knotd lost (a knotd restart forgets runtime zones)', async () => {
    const { serial } = await current()
    await knot.knotc('conf-begin')
    await knot.knotc('conf-unset', `zone[${ZONE}]`)
    await knot.knotc('conf-commit')
    assert.equal(await knot.soaSerial(ZONE), undefined)
    assert.deepEqual(await h.dnsctl.zones.reconcile(), [`${ZONE}.`])
    assert.equal(await knot.soaSerial(ZONE), serial)
    assert.deepEqual(await h.dnsctl.zones.reconcile(), [])
    // A zone file someone else replaced is republished from the API's view.
    const file = join(knot.zonesDir, `${ZONE}.zone`)
    const text = readFileSync(file, 'utf8')
    writeFileSync(file, text.replace(` ${serial} `, ` ${serial + 50} `))
    await knot.knotc('-b', 'zone-reload', ZONE)
    assert.equal(await knot.soaSerial(ZONE), serial + 50)
    assert.deepEqual(await h.dnsctl.zones.reconcile(), [`${ZONE}.`])
    assert.equal(await knot.soaSerial(ZONE), serial)
    assert.equal(readFileSync(file, 'utf8'), text)
  })

  test('a zone Knot already serves is adopted by PUT', async () => {
    assert.equal(await knot.soaSerial('adopt.test'), 3)
    const res = await h.call('PUT', '/v1/zones/adopt.test', {
      role: 'primary',
      zone_text: zoneText(4).replaceAll('example.test', 'adopt.test'),
    })
    assert.equal(res.status, 201, JSON.stringify(await res.clone().json()))
    assert.equal(await knot.soaSerial('adopt.test'), 4)
  })

  test('secondary zones: RRsets read-only, deletion still needs the exact revision, NOTIFY failure is a warning', async () => {
    let res = await h.call('PUT', '/v1/zones/replica.test', {
      role: 'secondary',
      zone_text: zoneText(5).replaceAll('example.test', 'replica.test'),
    })
    const created = await json(res)
    assert.equal(res.status, 201)
    assert.equal(created.role, 'secondary')
    res = await h.call(
      'POST',
      '/v1/zones/replica.test/changes',
      { changes: [{ action: 'upsert', name: 'x', type: 'A', ttl: 60, records: ['192.0.2.1'] }] },
      { 'if-match': `"${created.revision}"` },
    )
    assert.equal(res.status, 409)
    assert.equal((await json(res)).error.code, 'zone_is_secondary')
    res = await h.call('DELETE', '/v1/zones/replica.test')
    assert.equal(res.status, 428)
    res = await h.call('DELETE', '/v1/zones/replica.test', { expected_revision: 'stale' })
    assert.equal(res.status, 412)
    assert.equal(await knot.soaSerial('replica.test'), 5)

    // Point NOTIFY at a replica that never answers: the delete succeeds with a warning.
    h.dnsctl.zones.deps.notifier.replicas.push({ host: '127.0.0.1', port: silentPort })
    try {
      res = await h.call('DELETE', '/v1/zones/replica.test', undefined, { 'if-match': `"${created.revision}"` })
      const body = await json(res)
      assert.equal(res.status, 200, JSON.stringify(body))
      assert.equal(body.warnings.length, 1)
      assert.match(body.warnings[0], /NOTIFY for replica\.test\. to 127\.0\.0\.1:\d+ failed .*next SOA poll/)
    } finally {
      h.dnsctl.zones.deps.notifier.replicas.pop()
    }
    assert.equal(await knot.soaSerial('replica.test'), undefined)
    assert.deepEqual(replica.received.at(-1), { zone: 'replica.test', opcode: 'NOTIFY', servedSerial: undefined })
  })
})
