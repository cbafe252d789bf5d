/**
 * `tlsgate status` as a child process: routes from flags and the config file, stored
 * fingerprints by verdict (new ones apart), refusals, the last control-plane sync, and the
 * running gate's connection results through its metrics endpoint.
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { loadedPackages, tempDir } from '@gatehouse/testkit'
import { openStore } from '../src/db/index.ts'
import { recordObservations, setVerdict } from '../src/fingerprints/store.ts'
import { setSyncState } from '../src/fingerprints/sync-store.ts'
import { cli, MAIN, recordingBackend, startGate, waitFor } from './helpers.ts'

const dir = tempDir('tlsgate-status-')
after(() => dir.remove())

const fp = (c: string) => `t13d1516h2_${c.repeat(12)}_${c.repeat(12)}`

describe('tlsgate status', () => {
  test('routes, counts by verdict, refusals and the last sync; --json; a missing database is refused', async () => {
    const db = join(dir.path, 'gate.db')
    const config = join(dir.path, 'config.json')
    writeFileSync(
      config,
      JSON.stringify({
        control_plane: { url: 'https://cp.example.test:8443', instance_id: 'web-1', token: 'x'.repeat(20) },
      }),
    )
    const args = ['--db', db, '--config', config, '--route', '127.0.0.1:8443=127.0.0.1:443', '--enforce-unknown']

    const missing = await cli(['status', ...args])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^tlsgate: database .*gate\.db does not exist; check --db/)
    assert.equal(existsSync(db), false, 'status never creates the database')

    const store = await openStore(db)
    const seen = '2026-11-20T10:00:00.000Z'
    const later = '2026-11-21T10:00:00.000Z'
    const entry = (f: string, lastSeen: string, refused: number) => ({
      fingerprint: f,
      metadata: JSON.stringify({ sni: 'shop.example', ja3: 'a'.repeat(32), ja4: f, ja4_r: 'raw' }),
      count: refused + 1,
      refused,
      firstSeen: seen,
      lastSeen,
      sightings: [{ ip: '192.0.2.7', port: 50000, last_seen: lastSeen }],
    })
    await recordObservations(
      store.db,
      [entry(fp('a'), seen, 0), entry(fp('b'), later, 4), entry(fp('c'), seen, 0), entry(fp('d'), seen, 1)],
      100,
      later,
    )
    for (const [f, verdict] of [
      ['a', 'approved'],
      ['b', 'blocked'],
      ['d', 'pending'],
    ] as const)
      assert.ok(await setVerdict(store.db, fp(f), { verdict, actor: 'test', now: later }))
    await setSyncState(store.db, 'upload_ack_seq', '4', '2026-11-21T11:00:00.000Z')
    await store.close()

    const human = await cli(['status', ...args])
    assert.equal(human.code, 0, human.stderr)
    assert.equal(
      human.stdout,
      [
        'routes: 1',
        '  127.0.0.1:8443 -> 127.0.0.1:443',
        `database: ${db}`,
        'gate: unknown (no --metrics-listen: status reads the running gate through its metrics endpoint)',
        'unknown clients: refused (--enforce-unknown)',
        'fingerprints: 4 stored of at most 100000: 1 approved, 1 blocked, 1 pending, 1 new',
        'refused connections: 5',
        `last client seen: ${later}`,
        'control plane: https://cp.example.test:8443 as web-1; last upload acknowledged 2026-11-21T11:00:00.000Z; last policy pull never; 0 trusted ranges',
        '',
      ].join('\n'),
    )
    const json = await cli(['status', '--json', ...args])
    const report = JSON.parse(json.stdout)
    assert.deepEqual(report.fingerprints, { total: 4, approved: 1, blocked: 1, pending: 1, new: 1 })
    assert.equal(report.max_fingerprints, 100_000)
    assert.equal(report.refused_connections, 5)
    assert.deepEqual(report.routes, [{ listen: '127.0.0.1:8443', backend: '127.0.0.1:443' }])
    assert.equal(report.control_plane.instance_id, 'web-1')
    assert.doesNotMatch(json.stdout, /xxxxxxxxxx/, 'the control-plane token is never printed')

    // Routes by flag in the gate's service unit: status, run without them, still reports the store.
    const noRoute = await cli(['status', '--db', db])
    assert.equal(noRoute.code, 0, noRoute.stderr)
    assert.match(
      noRoute.stdout,
      /^routes: not given here \(serve's --route or \$TLSGATE_ROUTES; status works without\)\n/,
    )
    assert.match(noRoute.stdout, /\nfingerprints: 4 stored/)

    // status never loads the gate's server stack.
    const r = await loadedPackages([MAIN, 'status', ...args])
    assert.equal(r.code, 0, r.stderr)
    for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'prom-client'])
      assert.ok(!r.packages.includes(heavy), `status loaded ${heavy}: ${r.packages.join(', ')}`)
  })

  test('with --metrics-listen it reads the running gate: connections by result, or that it does not answer', async () => {
    const backend = await recordingBackend()
    const g = await startGate(backend.port, { 'metrics-listen': '127.0.0.1:0' })
    try {
      const metrics = g.gate.metricsAddress()!
      const args = [
        '--db',
        g.dbPath,
        '--route',
        `127.0.0.1:${g.port}=127.0.0.1:${backend.port}`,
        '--metrics-listen',
        `127.0.0.1:${metrics.port}`,
      ]
      // A client that does not speak TLS: one not_tls, counted by the running gate.
      const socket = connect(g.port, '127.0.0.1', () => socket.end('GET / HTTP/1.1\r\n\r\n'))
      socket.on('error', () => {})
      socket.resume()
      const live = await waitFor('the refusal in status', async () => {
        const r = await cli(['status', '--json', ...args])
        const report = JSON.parse(r.stdout)
        return report.gate.connections?.not_tls === 1 ? report : undefined
      })
      assert.equal(live.gate.running, true)
      const human = await cli(['status', ...args])
      assert.match(human.stdout, /^gate: running; connections since it started: 1 not_tls$/m)
      await g.gate.stop(0) // the gate only: its database stays for status to read
      const down = await cli(['status', ...args])
      assert.equal(down.code, 0, 'a stopped gate is a state, not a failure of status')
      assert.match(
        down.stdout,
        new RegExp(`^gate: not answering on 127\\.0\\.0\\.1:${metrics.port} \\(not running\\?\\)$`, 'm'),
      )
    } finally {
      await g.stop()
      await backend.close()
    }
  })
})
