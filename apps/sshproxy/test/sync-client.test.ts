/**
 * The gate's control-plane sync client (src/sync) end to end against REAL edgegate processes
 * over HTTPS, started from edgegate's entry file and seeded only through its CLI and admin API:
 * pages of 16 with acknowledgement, policy pull with the cursor, trusted ranges, both auth
 * methods, server_name, http and redirects refused, backoff, refused entries skipped.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { PassThrough } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { createLogger, type Decision } from '@gatehouse/kit'
import { createTestCa, freePort, tempDir, waitFor } from '@gatehouse/testkit'
import {
  type GateEntry,
  type SyncControlPlane,
  type SyncSink,
  type SyncSource,
  startSync,
  toObservation,
} from '../src/sync/index.ts'
import { api, controlPlaneFingerprints, type Edgegate, edgegateCli, edgegateToken, startEdgegate } from './edgegate.ts'

const ca = createTestCa()
const logger = createLogger({ name: 'sshproxy-sync-test', destination: new PassThrough(), level: 'silent' })
const fixed = () => 0.5

function entry(i: number, extra: Partial<GateEntry> = {}): GateEntry {
  const t = new Date(Date.now() - i * 1000).toISOString()
  return {
    fingerprint: i.toString(16).padStart(32, '0'),
    verdict: 'pending',
    decided_at: null,
    expires_at: null,
    first_seen: t,
    last_seen: t,
    count: i + 1,
    ips: [`192.0.2.${i % 250}`],
    ports: [22],
    sightings: [{ ip: `192.0.2.${i % 250}`, port: 50000 + i, last_seen: t }],
    metadata: { kex_algorithms: ['curve25519-sha256', 'ecdh-sha2-nistp256'], first_kex_packet_follows: false },
    ...extra,
  }
}

/** The sync client under test on an in-memory gate, with fixed jitter. */
function syncFor(gate: { source: SyncSource; sink: SyncSink }, controlPlane: SyncControlPlane) {
  return startSync({ controlPlane, source: gate.source, sink: gate.sink, logger, random: fixed })
}

/** A gate store in memory: entries with change sequences, an acknowledgement, decisions, ranges. */
function memoryGate(entries: GateEntry[]) {
  const items = entries.map((e, i) => ({ seq: i + 1, e }))
  const state = {
    acked: 0,
    cursor: undefined as string | undefined,
    ranges: undefined as string[] | undefined,
    pages: 0,
    resync: false,
  }
  const decisions = new Map<string, Decision>()
  const source: SyncSource = {
    acked: async () => state.acked,
    changedSince: async (after, limit) => {
      const page = items.filter((x) => x.seq > after).slice(0, limit)
      if (page.length) state.pages++
      return page.map((x) => ({ seq: x.seq, observation: toObservation(x.e) }))
    },
    ack: async (seq) => {
      state.acked = seq
    },
  }
  const sink: SyncSink = {
    cursor: async () => state.cursor,
    applyDecisions: async (ds, cursor) => {
      for (const d of ds) {
        const prev = decisions.get(d.fingerprint)
        if (!prev || prev.updated_at <= d.updated_at) decisions.set(d.fingerprint, d)
      }
      state.cursor = cursor
    },
    replaceManagedRanges: async (cidrs) => {
      state.ranges = [...cidrs]
    },
    resyncPending: async () => state.resync,
    startResync: async () => {
      state.resync = true
    },
    finishResync: async (listed) => {
      const gone = [...decisions.keys()].filter((fp) => !listed.has(fp))
      for (const fp of gone) decisions.delete(fp)
      state.resync = false
      return gone.length
    },
  }
  return { source, sink, state, decisions, add: (e: GateEntry) => items.push({ seq: items.length + 1, e }) }
}

describe('sync client against a real edgegate', () => {
  let main: Edgegate
  let named: Edgegate
  const tokens: Record<string, string> = {}
  let admin: string
  const dir = tempDir('sshproxy-sync-')
  const rangesFile = join(dir.path, 'ranges.txt')
  const client = ca.issueClient('gate-m')

  before(async () => {
    writeFileSync(rangesFile, '# office\n198.51.100.0/24\n2001:db8::/32\n')
    main = await startEdgegate(ca, { extra: ['--trusted-ranges-file', rangesFile] })
    admin = await edgegateToken(main.database, ['admin', 'add', 'admin'])
    for (const id of ['gate-t', 'gate-x']) {
      tokens[id] = await edgegateToken(main.database, ['node', 'add', '--kind', 'sshgate', id])
    }
    const m = await edgegateCli(main.database, ['node', 'add', '--kind', 'sshgate', '--cert-name', 'gate-m', 'gate-m'])
    assert.equal(m.code, 0, m.stderr)
    // A second process on the same database whose certificate names only edgegate.test.
    named = await startEdgegate(ca, {
      database: main.database,
      server: ca.issueServer(['edgegate.test']),
      serverName: 'edgegate.test',
    })
  })
  after(async () => {
    await named?.stop()
    await main?.stop()
    dir.remove()
    ca.remove()
  })

  const tokenPlane = (base: string, instanceId = 'gate-t'): SyncControlPlane => ({
    url: base,
    instanceId,
    auth: { kind: 'token', token: tokens[instanceId]!, ca: ca.caPath },
    syncIntervalMs: 3_600_000,
  })

  test('token: uploads in pages of 16 with acknowledgement, pulls decisions and trusted ranges', async () => {
    const gate = memoryGate(Array.from({ length: 20 }, (_, i) => entry(i)))
    const sync = syncFor(gate, tokenPlane(main.base))
    try {
      const first = await sync.syncNow()
      assert.equal(first.ok, true, first.error?.message)
      // Both clocks are this machine's: the offset is within the Date header's second.
      assert.ok(Math.abs(first.clockOffsetMs!) < 1500, `clock offset ${first.clockOffsetMs} ms`)
      assert.equal(gate.state.acked, 20)
      assert.equal(gate.state.pages, 2, '16 + 4')
      const stored = await controlPlaneFingerprints(main, admin, 'gate-t')
      assert.equal(stored.length, 20)
      const one = stored.find((f) => f.fingerprint === entry(3).fingerprint)
      assert.equal(one?.reported_status, 'unknown')
      assert.equal(one?.metadata.kex_algorithms, 'curve25519-sha256,ecdh-sha2-nistp256')
      assert.deepEqual(gate.state.ranges, ['198.51.100.0/24', '2001:db8::/32'])
      // Nothing changed: nothing re-sent.
      const again = await sync.syncNow()
      assert.equal(again.uploaded, 0)
      // An administrator approves at the control plane; the gate pulls it.
      const put = await api(main, admin, `/api/decisions/gate-t/${entry(3).fingerprint}`, {
        status: 'approved',
        label: 'deploy bot',
      })
      assert.equal(put.status, 200, JSON.stringify(put.body))
      const pulled = await sync.syncNow()
      assert.equal(pulled.decisions, 1)
      const d = gate.decisions.get(entry(3).fingerprint)
      assert.equal(d?.status, 'approved')
      assert.equal(d?.label, 'deploy bot')
      assert.equal(gate.state.cursor, put.body.updated_at)
      // A new local change is uploaded on the next cycle.
      gate.add(entry(3, { verdict: 'approved', decided_at: put.body.updated_at, count: 50 }))
      const next = await sync.syncNow()
      assert.equal(next.uploaded, 1)
      const after = await controlPlaneFingerprints(main, admin, 'gate-t')
      assert.equal(after.find((f) => f.fingerprint === entry(3).fingerprint)?.count, 50)
    } finally {
      await sync.stop()
    }
  })

  test('a gate back after the control plane removed old deletions pulls everything again and drops the deleted block', async () => {
    const cp = await startEdgegate(ca, { extra: ['--retention-interval', '1s', '--log-level', 'info'] })
    const gate = memoryGate([])
    const token = await edgegateToken(cp.database, ['node', 'add', '--kind', 'sshgate', 'gate-away'])
    const decide = async (verb: string, fp: string) => {
      const r = await edgegateCli(cp.database, ['decision', verb, '--instance', 'gate-away', fp])
      assert.equal(r.code, 0, r.stderr)
    }
    const [A, B] = [entry(1).fingerprint, entry(2).fingerprint]
    await decide('block', A)
    await decide('approve', B)
    // The sync starts with a cycle of its own.
    const sync = syncFor(gate, {
      url: cp.base,
      instanceId: 'gate-away',
      auth: { kind: 'token', token, ca: ca.caPath },
      syncIntervalMs: 3_600_000,
    })
    try {
      assert.equal((await sync.syncNow()).ok, true)
      assert.equal(gate.decisions.get(A)?.status, 'blocked')
      // The gate goes away; A's block is deleted; forty days pass (every time in the database
      // and the gate's cursor move back), and retention removes the deletion.
      await decide('delete', A)
      const days40 = 40 * 86_400_000_000
      const db = new DatabaseSync(cp.database.slice('sqlite:'.length))
      try {
        db.exec(`update decisions set updated_us = updated_us - ${days40}`)
        db.exec(`update decision_clock set last_us = last_us - ${days40}`)
        await waitFor('the deletion removed', () => {
          const row = db.prepare('select count(*) as n from decisions where deleted = 1').get() as { n: number }
          return Number(row.n) === 0
        })
      } finally {
        db.close()
      }
      const cursor = gate.state.cursor!
      gate.state.cursor = new Date(Date.parse(cursor) - days40 / 1000).toISOString()
      const back = await sync.syncNow()
      assert.equal(back.ok, true, back.error?.message)
      assert.equal(back.dropped, 1, 'the block the control plane no longer has')
      assert.deepEqual(
        [...gate.decisions.entries()].map(([fp, d]) => [fp, d.status]),
        [[B, 'approved']],
      )
      // The server writes its log asynchronously: the line may follow the answer by a moment.
      await waitFor('the warning about the pull from before the removed deletions', () =>
        /"msg":"a gate pulled from before deleted decisions that retention removed/.test(cp.child.log()),
      )
      // Then plain incremental pulls again.
      const next = await sync.syncNow()
      assert.deepEqual([next.ok, next.dropped], [true, undefined])
    } finally {
      await sync.stop()
      await cp.stop()
    }
  })

  test('mTLS with server_name: the client certificate names the node; no discovery means no managed ranges', async () => {
    const gate = memoryGate([entry(100)])
    gate.state.ranges = ['203.0.113.0/24']
    const plane: SyncControlPlane = {
      url: `https://127.0.0.1:${named.port}`,
      instanceId: 'gate-m',
      auth: { kind: 'mtls', clientCert: client.certPath, clientKey: client.keyPath, ca: ca.caPath },
      serverName: 'edgegate.test',
      syncIntervalMs: 3_600_000,
    }
    const blocked = await api(main, admin, `/api/decisions/gate-m/${entry(7).fingerprint}`, { status: 'blocked' })
    assert.equal(blocked.status, 200, JSON.stringify(blocked.body))
    const sync = syncFor(gate, plane)
    try {
      const r = await sync.syncNow()
      assert.equal(r.ok, true, r.error?.message)
      assert.equal(gate.state.acked, 1)
      assert.equal(gate.decisions.get(entry(7).fingerprint)?.status, 'blocked')
      assert.deepEqual(gate.state.ranges, [], 'trusted_ranges omitted: managed ranges cleared')
    } finally {
      await sync.stop()
    }
    // Without the server-name override the certificate does not match 127.0.0.1.
    const { serverName: _, ...plain } = plane
    const gate2 = memoryGate([entry(101)])
    const bad = syncFor(gate2, plain)
    try {
      const r = await bad.syncNow()
      assert.equal(r.ok, false)
      assert.equal(r.error?.code, 'network')
      assert.equal(gate2.state.acked, 0)
    } finally {
      await bad.stop()
    }
  })

  test('configuration: http:// and two auth methods are refused', () => {
    const gate = memoryGate([])
    const go = (cp: SyncControlPlane) => () =>
      startSync({ controlPlane: cp, source: gate.source, sink: gate.sink, logger })
    assert.throws(go({ ...tokenPlane(main.base), url: main.base.replace('https:', 'http:') }), /https/)
    assert.throws(
      go({
        ...tokenPlane(main.base),
        auth: {
          kind: 'mtls',
          clientCert: client.certPath,
          clientKey: client.keyPath,
          ca: ca.caPath,
          token: 'x',
        } as never,
      }),
      /exactly one|no token/,
    )
    assert.throws(go({ ...tokenPlane(main.base), url: `${main.base}?x=1` }), /plain base URL/)
  })

  test('redirects are refused, even to the real HTTPS control plane; failures back off', async () => {
    const port = await freePort()
    const cert = ca.issueServer()
    const redirector = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      res.writeHead(307, { location: `${main.base}${req.url}` }).end()
    })
    await new Promise<void>((r) => redirector.listen(port, '127.0.0.1', r))
    const gate = memoryGate([entry(200)])
    const interval = 10_000
    const sync = syncFor(gate, { ...tokenPlane(`https://127.0.0.1:${port}`), syncIntervalMs: interval })
    try {
      const r1 = await sync.syncNow()
      assert.equal(r1.ok, false)
      assert.equal(r1.error?.code, 'redirect_refused')
      const r2 = await sync.syncNow()
      assert.equal(r2.error?.code, 'redirect_refused')
      const s = sync.status()
      assert.ok(s.consecutiveFailures >= 2)
      assert.equal(s.nextDelayMs, interval * 2 ** (s.consecutiveFailures - 1), 'exponential backoff')
      assert.equal(gate.state.acked, 0, 'nothing acknowledged')
      assert.equal(gate.state.cursor, undefined, 'no decisions applied')
      const stored = await controlPlaneFingerprints(main, admin, 'gate-t')
      assert.ok(!stored.some((f) => f.fingerprint === entry(200).fingerprint))
    } finally {
      await sync.stop()
      redirector.close()
    }
  })

  // The gate's clock dates its sightings and decides when an expiring block ends: when it is off
  // the control plane's, say so once, and once again when it is right.
  test("a clock off the control plane's is logged once, and once more when it agrees again", async () => {
    const port = await freePort()
    const cert = ca.issueServer()
    let aheadMs = 2 * 3600_000
    const fake = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      res.setHeader('content-type', 'application/json')
      res.setHeader('date', new Date(Date.now() + aheadMs).toUTCString())
      if (req.url?.startsWith('/v1/observations/batch')) return res.end('{"accepted":0}')
      res.end(JSON.stringify({ cursor: new Date().toISOString(), decisions: [], more: false }))
    })
    await new Promise<void>((r) => fake.listen(port, '127.0.0.1', r))
    const lines: string[] = []
    const watched = createLogger({
      name: 'clock',
      level: 'info',
      destination: { write: (l: string) => void lines.push(l) } as never,
    })
    const sync = startSync({
      controlPlane: tokenPlane(`https://127.0.0.1:${port}`),
      ...memoryGate([]),
      logger: watched,
      random: fixed,
    })
    const said = (text: string) => lines.filter((l) => l.includes(text))
    try {
      const r1 = await sync.syncNow()
      assert.equal(r1.ok, true, r1.error?.message)
      assert.ok(Math.abs(r1.clockOffsetMs! - aheadMs) < 1500, `offset ${r1.clockOffsetMs}`)
      await sync.syncNow()
      const warned = said('behind the control plane')
      assert.equal(warned.length, 1, 'one warning while it stays off')
      assert.match(
        warned[0]!,
        /"clock_offset_seconds":7200,.*this host's clock is 7200 s behind the control plane's: .*synchronise it \(NTP\)/,
      )
      aheadMs = 0
      await sync.syncNow()
      await sync.syncNow()
      assert.equal(said("clock agrees with the control plane's again").length, 1)
      aheadMs = -120_000
      await sync.syncNow()
      assert.equal(said('s ahead of the control plane').length, 1)
    } finally {
      await sync.stop()
      fake.close()
    }
  })

  test('a malformed policy response is refused before anything is applied', async () => {
    const port = await freePort()
    const cert = ca.issueServer()
    const fake = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      res.setHeader('content-type', 'application/json')
      if (req.url?.startsWith('/v1/observations/batch')) return res.end('{"accepted":0}')
      res.end(JSON.stringify({ cursor: 'not a time', decisions: [{ fingerprint: 'x' }], more: false }))
    })
    await new Promise<void>((r) => fake.listen(port, '127.0.0.1', r))
    const gate = memoryGate([])
    const sync = syncFor(gate, tokenPlane(`https://127.0.0.1:${port}`))
    try {
      const r = await sync.syncNow()
      assert.equal(r.ok, false)
      assert.equal(r.error?.code, 'bad_response')
      assert.equal(gate.state.cursor, undefined)
      assert.equal(gate.state.ranges, undefined)
      assert.equal(gate.decisions.size, 0)
    } finally {
      await sync.stop()
      fake.close()
    }
  })

  test('unreachable control plane and a wrong token fail without losing local state', async () => {
    const closed = await freePort()
    const gate = memoryGate([entry(300)])
    const down = syncFor(gate, tokenPlane(`https://127.0.0.1:${closed}`))
    try {
      const r = await down.syncNow()
      assert.equal(r.error?.code, 'network')
      assert.equal(gate.state.acked, 0)
    } finally {
      await down.stop()
    }
    const wrong = syncFor(gate, {
      ...tokenPlane(main.base),
      auth: { kind: 'token', token: tokens['gate-x']!, ca: ca.caPath },
    })
    try {
      const r = await wrong.syncNow()
      assert.equal(r.error?.status, 403, 'gate-x token used for gate-t')
      assert.equal(r.error?.code, 'instance_mismatch')
      assert.equal(gate.state.acked, 0)
    } finally {
      await wrong.stop()
    }
  })

  test('an entry the control plane refuses is skipped; the rest of its page is uploaded', async () => {
    const gate = memoryGate([entry(400), entry(401, { ips: ['not-an-ip'] }), entry(402)])
    const sync = syncFor(gate, tokenPlane(main.base))
    try {
      const r = await sync.syncNow()
      assert.equal(r.ok, true, r.error?.message)
      assert.equal(gate.state.acked, 3)
      const stored = await controlPlaneFingerprints(main, admin, 'gate-t')
      const fps = new Set(stored.map((f) => f.fingerprint))
      assert.ok(fps.has(entry(400).fingerprint) && fps.has(entry(402).fingerprint))
      assert.ok(!fps.has(entry(401).fingerprint))
    } finally {
      await sync.stop()
    }
  })
})

describe('a gate pulling from a control plane of another version', () => {
  test('a fingerprint the gate never computes is skipped and counted; upper case is stored as the gate computes it', async () => {
    const { fakeBackend, readEntries, startGate, metric } = await import('./helpers.ts')
    // A CA of its own: the other suite's is removed when that suite ends.
    const ownCa = createTestCa()
    const port = await freePort()
    const cert = ownCa.issueServer()
    const now = new Date().toISOString()
    const decision = (fingerprint: string) => ({
      scope_type: 'instance',
      scope_id: 'edge-1',
      fingerprint,
      status: 'blocked',
      label: '',
      updated_at: now,
      actor: 'admin:old',
    })
    const fake = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      res.setHeader('content-type', 'application/json')
      if (req.url?.startsWith('/v1/observations/batch')) return res.end('{"accepted":0,"duplicates":0}')
      res.end(JSON.stringify({ cursor: now, decisions: [decision('zzz'), decision('C'.repeat(32))], more: false }))
    })
    await new Promise<void>((r) => fake.listen(port, '127.0.0.1', r))
    const backend = await fakeBackend()
    const gate = await startGate(backend.port, [], undefined, {
      control_plane: {
        url: `https://127.0.0.1:${port}`,
        instance_id: 'edge-1',
        token: 'x'.repeat(40),
        ca: ownCa.caPath,
        sync_interval: '1s',
      },
    })
    try {
      await waitFor('the pull applied', async () => (await readEntries(gate.dbPath)).length > 0)
      const entries = await readEntries(gate.dbPath)
      assert.deepEqual(
        entries.map((e) => [e.fingerprint, e.verdict]),
        [['c'.repeat(32), 'blocked']],
      )
      assert.ok((metric(await gate.metrics(), 'sshproxy_sync_decisions_skipped_total') ?? 0) >= 1)
      // The log reaches its file after the store write: wait for it rather than race it.
      await waitFor('the skip logged', () =>
        /pulled decisions for fingerprints this gate never computes were skipped/.test(gate.log()),
      )
    } finally {
      await gate.stop()
      await backend.close()
      fake.close()
      ownCa.remove()
    }
  })
})
