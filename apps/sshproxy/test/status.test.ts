/**
 * `sshproxy status` as a child process: routes from flags and the config file, stored
 * fingerprints by verdict (new ones apart), enrolments, and the last control-plane sync.
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { freePort, loadedPackages, tempDir } from '@gatehouse/testkit'
import { openStore } from '../src/db/index.ts'
import { recordObservations } from '../src/fingerprints/store.ts'
import { applyDecisions, setSyncState } from '../src/fingerprints/sync-store.ts'
import { cli, fakeBackend, MAIN, rawClient, startGate, waitFor } from './helpers.ts'

const dir = tempDir('sshproxy-status-')
after(() => dir.remove())

const fp = (c: string) => c.repeat(32)

describe('sshproxy status', () => {
  test('routes, counts by verdict, enrolments and the last sync; --json; a missing database is refused', async () => {
    const db = join(dir.path, 'gate.db')
    const config = join(dir.path, 'config.json')
    writeFileSync(
      config,
      JSON.stringify({
        control_plane: { url: 'https://cp.example.test:8443', instance_id: 'edge-1', token: 'x'.repeat(20) },
      }),
    )
    const args = ['--db', db, '--config', config, '--route', '127.0.0.1:2222=127.0.0.1:22']

    const missing = await cli(['status', ...args])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^sshproxy: database .*gate\.db does not exist; check --db/)
    assert.equal(existsSync(db), false, 'status never creates the database')

    const store = await openStore(db)
    const seen = '2026-11-20T10:00:00.000Z'
    const later = '2026-11-21T10:00:00.000Z'
    const entry = (f: string, lastSeen: string, enrolled: number) => ({
      fingerprint: f,
      identification: 'SSH-2.0-OpenSSH_9.2p1',
      clientVersion: 'OpenSSH_9.2p1',
      metadata: '{}',
      count: 1,
      enrolled,
      firstSeen: seen,
      lastSeen,
      sightings: [{ ip: '192.0.2.7', port: 50000, last_seen: lastSeen }],
    })
    await recordObservations(
      store.db,
      [entry(fp('a'), seen, 0), entry(fp('b'), seen, 0), entry(fp('c'), later, 2), entry(fp('d'), seen, 1)],
      100,
      later,
    )
    await setSyncState(store.db, 'upload_ack_seq', '4', '2026-11-21T11:00:00.000Z')
    await store.close()
    for (const [verb, f] of [
      ['approve', 'a'],
      ['block', 'b'],
      ['pending', 'd'],
    ] as const) {
      const r = await cli([verb, '--db', db, fp(f)])
      assert.equal(r.code, 0, r.stderr)
    }

    const human = await cli(['status', ...args])
    assert.equal(human.code, 0, human.stderr)
    assert.equal(
      human.stdout,
      [
        'routes: 1',
        '  127.0.0.1:2222 -> 127.0.0.1:22',
        `database: ${db}`,
        'gate: unknown (no --metrics-listen: status reads the running gate through its metrics endpoint)',
        'unknown clients: rejected',
        'fingerprints: 4 stored of at most 100000: 1 approved, 1 blocked, 1 pending, 1 new',
        'enrolled connections: 3',
        `last client seen: ${later}`,
        'control plane: https://cp.example.test:8443 as edge-1; last upload acknowledged 2026-11-21T11:00:00.000Z; last policy pull never; 0 trusted ranges',
        '',
      ].join('\n'),
    )
    const json = await cli(['status', '--json', ...args])
    const report = JSON.parse(json.stdout)
    assert.deepEqual(report.fingerprints, { total: 4, approved: 1, blocked: 1, pending: 1, new: 1 })
    assert.equal(report.max_fingerprints, 100_000)
    assert.deepEqual(report.routes, [{ listen: '127.0.0.1:2222', backend: '127.0.0.1:22' }])
    assert.equal(report.control_plane.instance_id, 'edge-1')
    assert.doesNotMatch(json.stdout, /xxxxxxxxxx/, 'the control-plane token is never printed')

    // Pulled blocks with an expiry: one past it counts as pending (the gate treats it so), one not yet as blocked.
    const reopened = await openStore(db)
    const past = new Date(Date.now() - 60_000).toISOString()
    const future = new Date(Date.now() + 3_600_000).toISOString()
    await applyDecisions(
      reopened.db,
      [
        { fingerprint: fp('e'), status: 'blocked', label: '', updated_at: later, actor: 'cp', expires_at: past },
        { fingerprint: fp('f'), status: 'blocked', label: '', updated_at: later, actor: 'cp', expires_at: future },
      ],
      later,
    )
    await reopened.close()
    const expiring = JSON.parse((await cli(['status', '--json', ...args])).stdout)
    assert.deepEqual(expiring.fingerprints, { total: 6, approved: 1, blocked: 2, pending: 2, new: 1 })
    // An entry a pulled decision made (never a connection) is not the last client seen.
    const pulledAt = new Date(Date.parse(later) + 3_600_000).toISOString()
    const again = await openStore(db)
    await applyDecisions(
      again.db,
      [{ fingerprint: fp('g'), status: 'approved', label: '', updated_at: pulledAt, actor: 'cp' }],
      pulledAt,
    )
    await again.close()
    assert.equal(JSON.parse((await cli(['status', '--json', ...args])).stdout).last_client_seen, later)
    const list = await cli(['list', '--db', db])
    assert.match(list.stdout, new RegExp(`${fp('e')}\\s+pending \\(expired\\)\\s`))
    assert.match(list.stdout, new RegExp(`${fp('f')}\\s+blocked until ${future.replace(/\./g, '\\.')}\\s`))

    // The gate's service unit (or npm start) gives the routes by flag and the token by its
    // environment: status, run from a shell with neither, still reports the store and the sync.
    const bare = join(dir.path, 'no-secrets.json')
    writeFileSync(
      bare,
      JSON.stringify({ db, control_plane: { url: 'https://cp.example.test:8443', instance_id: 'edge-1' } }),
    )
    const noRoute = await cli(['status', '--config', bare])
    assert.equal(noRoute.code, 0, noRoute.stderr)
    assert.match(
      noRoute.stdout,
      /^routes: not given here \(serve's --route or \$SSHPROXY_ROUTES; status works without\)\n/,
    )
    assert.match(
      noRoute.stdout,
      /\ncontrol plane: https:\/\/cp\.example\.test:8443 as edge-1; last upload acknowledged 2026-11-21T11:00:00\.000Z/,
    )
    // serve still needs both.
    const serve = await cli(['serve', '--config', bare])
    assert.equal(serve.code, 1, serve.stderr)
    assert.match(serve.stderr, /an auth method is required/)
    assert.match(serve.stderr, /at least one route is required/)

    // The store commands and --help never load the gate's server stack.
    for (const a of [['--help'], ['list', '--db', db], ['status', ...args]]) {
      const r = await loadedPackages([MAIN, ...a])
      assert.equal(r.code, 0, r.stderr)
      for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'prom-client'])
        assert.ok(!r.packages.includes(heavy), `${a.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
    }
  })

  test('with --metrics-listen it reads the running gate: connections by result, or that it does not answer', async () => {
    const backend = await fakeBackend()
    // The database outside the gate's folder: it outlives the gate (stop removes that folder).
    const db = join(dir.path, 'live.db')
    const gate = await startGate(backend.port, [], db)
    try {
      const args = [
        '--db',
        db,
        '--route',
        `127.0.0.1:${gate.port}=127.0.0.1:${backend.port}`,
        '--metrics-listen',
        `127.0.0.1:${gate.metricsPort}`,
      ]
      // A client that breaks the protocol: one protocol_error, counted by the running gate.
      await rawClient(gate.port, Buffer.from('SSH-1.5-ancient\r\n'))
      const live = await waitFor('the protocol error in status', async () => {
        const r = await cli(['status', '--json', ...args])
        const report = JSON.parse(r.stdout)
        return report.gate.connections?.protocol_error === 1 ? report : undefined
      })
      assert.equal(live.gate.running, true)
      const human = await cli(['status', ...args])
      assert.match(human.stdout, /^gate: running; connections since it started: 1 protocol_error$/m)
      assert.equal(live.sync, null, 'no control plane: no sync line')
      await gate.stop()
      const down = await cli(['status', ...args])
      assert.equal(down.code, 0, 'a stopped gate is a state, not a failure of status')
      assert.match(
        down.stdout,
        new RegExp(`^gate: not answering on 127\\.0\\.0\\.1:${gate.metricsPort} \\(not running\\?\\)$`, 'm'),
      )
    } finally {
      await gate.stop()
      await backend.close()
    }
  })

  test('with a control plane that does not answer, status says the sync fails (the log said so; status did not)', async () => {
    const backend = await fakeBackend()
    const cp = { url: `https://127.0.0.1:${await freePort()}`, instance_id: 'edge-1', token: 'x'.repeat(40) }
    const gate = await startGate(backend.port, [], undefined, { control_plane: cp })
    try {
      const config = join(dir.path, 'cp-down.json')
      writeFileSync(config, JSON.stringify({ db: gate.dbPath, control_plane: cp }))
      const args = ['--config', config, '--metrics-listen', `127.0.0.1:${gate.metricsPort}`]
      const report = await waitFor('a failed sync cycle', async () => {
        const r = JSON.parse((await cli(['status', '--json', ...args])).stdout)
        return r.sync?.failed_cycles > 0 ? r : undefined
      })
      assert.equal(report.sync.last_success, null)
      const human = await cli(['status', ...args])
      assert.match(
        human.stdout,
        /^sync: last success never since the gate started; \d+ failed cycles since it started \(failing: see the gate's log\)$/m,
      )
      assert.doesNotMatch(human.stdout, new RegExp('x'.repeat(40)), 'the token is never printed')
    } finally {
      await gate.stop()
      await backend.close()
    }
  })
})
