import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Child, freePort, type Knot, startChild, startKnot, tempDir } from '@gatehouse/testkit'
import { revisionOf } from '../src/zones/model.ts'
import { json, zoneText } from './helpers.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

/**
 * Crash safety: the real dnsctl process kills itself (SIGKILL) at a failpoint in the middle
 * of a publication; a fresh process must start with the zone file, knotd and the API in
 * agreement, no intent left, the history intact and exactly one audit event for the request.
 */
describe('crash at any point of publication', () => {
  let knot: Knot
  before(async () => {
    knot = await startKnot()
  })
  after(() => knot.stop())

  function envFor(stateDir: string, port: number): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      DNSCTL_LISTEN: `127.0.0.1:${port}`,
      DNSCTL_STATE_DIR: stateDir,
      DNSCTL_KNOT_SOCKET: knot.controlSocket,
      DNSCTL_KNOT_ZONES_DIR: knot.zonesDir,
      DNSCTL_KNOT_ADDRESS: `127.0.0.1:${knot.port}`,
      DNSCTL_LOG_LEVEL: 'warn',
    }
  }

  async function run(stateDir: string, failpoint?: string): Promise<{ child: Child; base: string }> {
    // A free port can be taken by a parallel suite before dnsctl binds it: then another one.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      try {
        const child = await startChild({
          name: 'dnsctl',
          command: process.execPath,
          args: [MAIN],
          logFile: join(stateDir, `dnsctl-${port}.log`),
          env: { ...envFor(stateDir, port), ...(failpoint ? { DNSCTL_FAILPOINTS: failpoint } : {}) },
          probe: async () => (await fetch(`${base}/healthz`)).ok,
        })
        return { child, base }
      } catch (err) {
        if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message)) throw err
      }
    }
  }

  function exited(child: Child): Promise<NodeJS.Signals | null> {
    if (child.process.exitCode !== null || child.process.signalCode !== null) {
      return Promise.resolve(child.process.signalCode)
    }
    return new Promise((r) => child.process.once('exit', (_code, signal) => r(signal)))
  }

  async function crashDuring(child: Child, request: Promise<Response>) {
    await assert.rejects(request, 'the request must die with the process')
    assert.equal(await exited(child), 'SIGKILL')
  }

  const call = (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(base + path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })

  /** After restart: file, knotd and API agree; no intent left; one audit event for the batch. */
  async function consistent(base: string, stateDir: string, zone: string) {
    assert.deepEqual(
      readdirSync(join(stateDir, 'journal')).filter((n) => n.endsWith('.intent.json')),
      [],
    )
    const res = await call(base, 'GET', `/v1/zones/${zone}`)
    if (res.status === 404) {
      assert.equal(await knot.soaSerial(zone), undefined)
      assert.equal(existsSync(join(knot.zonesDir, `${zone}.zone`)), false)
      return undefined
    }
    const state = await json(res)
    const file = readFileSync(join(knot.zonesDir, `${zone}.zone`), 'utf8')
    assert.equal(file, state.zone_text)
    assert.equal(revisionOf(state.role, file), state.revision)
    assert.equal(await knot.soaSerial(zone), state.serial)
    return state
  }

  test('one dnsctl per state folder: a second process is refused with one line', async () => {
    const dir = tempDir('dnsctl-lock-')
    try {
      const first = await run(dir.path)
      try {
        const env = envFor(dir.path, await freePort())
        const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
          execFile(process.execPath, [MAIN], { env }, (err, _out, stderr) =>
            resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
          )
        })
        assert.equal(r.code, 1)
        assert.match(r.stderr, /^dnsctl: another dnsctl \(pid \d+\) is using the state folder/)
        assert.equal(r.stderr.trim().split('\n').length, 1)
        assert.equal((await fetch(`${first.base}/healthz`)).status, 200)
      } finally {
        await first.child.stop()
      }
      // A clean stop releases the lock; a SIGKILL leaves a stale one that is taken over (the cases below).
      assert.equal(existsSync(join(dir.path, 'dnsctl.pid')), false)
    } finally {
      dir.remove()
    }
  })

  let n = 0
  const cases: { failpoint: string; outcome: 'committed' | 'aborted' }[] = [
    { failpoint: 'publish:after-intent', outcome: 'aborted' },
    { failpoint: 'publish:after-history', outcome: 'aborted' },
    { failpoint: 'publish:after-rename', outcome: 'committed' },
    { failpoint: 'publish:after-reload', outcome: 'committed' },
    { failpoint: 'publish:after-audit', outcome: 'committed' },
  ]
  for (const { failpoint, outcome } of cases) {
    test(`change batch, crash at ${failpoint}: ${outcome} after restart`, async () => {
      const dir = tempDir('dnsctl-crash-')
      const zone = `c${n++}.test`
      try {
        const first = await run(dir.path, failpoint)
        let res = await call(first.base, 'PUT', `/v1/zones/${zone}`, {
          role: 'primary',
          zone_text: zoneText(100).replaceAll('example.test', zone),
        })
        assert.equal(res.status, 201)
        const before = await json(res)
        await crashDuring(
          first.child,
          call(
            first.base,
            'POST',
            `/v1/zones/${zone}/changes`,
            { changes: [{ action: 'upsert', name: 'new', type: 'A', ttl: 60, records: ['192.0.2.77'] }] },
            { 'if-match': `"${before.revision}"`, 'x-request-id': 'crash-batch-1' },
          ),
        )
        const second = await run(dir.path)
        try {
          const state = await consistent(second.base, dir.path, zone)
          assert.equal(state!.serial, outcome === 'committed' ? 101 : 100)
          assert.equal(state!.revision === before.revision, outcome === 'aborted')
          const audit = await json(await call(second.base, 'GET', `/v1/zones/${zone}/audit`))
          const mine = audit.events.filter((e: { request_id: string }) => e.request_id === 'crash-batch-1')
          assert.equal(mine.length, 1, JSON.stringify(audit.events))
          assert.equal(mine[0].outcome, outcome)
          // A committed batch has its prior revision in history (an aborted one may not: it replaced nothing).
          const history = await json(await call(second.base, 'GET', `/v1/zones/${zone}/history`))
          if (outcome === 'committed') assert.equal(history.history[0].revision, before.revision)
          // The recovered zone takes further changes normally.
          res = await call(
            second.base,
            'POST',
            `/v1/zones/${zone}/changes`,
            { changes: [{ action: 'upsert', name: 'after', type: 'A', ttl: 60, records: ['192.0.2.78'] }] },
            { 'if-match': `"${state!.revision}"` },
          )
          assert.equal(res.status, 200)
        } finally {
          await second.child.stop()
        }
      } finally {
        dir.remove()
      }
    })
  }

  for (const failpoint of ['create:after-file', 'create:after-conf']) {
    test(`zone create, crash at ${failpoint}: undone after restart`, async () => {
      const dir = tempDir('dnsctl-crash-')
      const zone = `c${n++}.test`
      try {
        const first = await run(dir.path, failpoint)
        await crashDuring(
          first.child,
          call(
            first.base,
            'PUT',
            `/v1/zones/${zone}`,
            { role: 'primary', zone_text: zoneText(1).replaceAll('example.test', zone) },
            { 'x-request-id': 'crash-create' },
          ),
        )
        const second = await run(dir.path)
        try {
          assert.equal(await consistent(second.base, dir.path, zone), undefined)
          assert.ok(!(await knot.knotc('conf-read', 'zone.domain')).includes(zone))
          const audit = await json(await call(second.base, 'GET', `/v1/zones/${zone}/audit`))
          assert.deepEqual(
            audit.events.map((e: { outcome: string; action: string }) => [e.action, e.outcome]),
            [['create', 'aborted']],
          )
        } finally {
          await second.child.stop()
        }
      } finally {
        dir.remove()
      }
    })
  }

  for (const failpoint of ['delete:after-conf', 'delete:after-row']) {
    test(`zone delete, crash at ${failpoint}: finished after restart`, async () => {
      const dir = tempDir('dnsctl-crash-')
      const zone = `c${n++}.test`
      try {
        const first = await run(dir.path, failpoint)
        const res = await call(first.base, 'PUT', `/v1/zones/${zone}`, {
          role: 'primary',
          zone_text: zoneText(1).replaceAll('example.test', zone),
        })
        const created = await json(res)
        await crashDuring(
          first.child,
          call(first.base, 'DELETE', `/v1/zones/${zone}`, undefined, {
            'if-match': `"${created.revision}"`,
            'x-request-id': 'crash-delete',
          }),
        )
        const second = await run(dir.path)
        try {
          assert.equal(await consistent(second.base, dir.path, zone), undefined)
          const audit = await json(await call(second.base, 'GET', `/v1/zones/${zone}/audit`))
          assert.deepEqual(
            audit.events.map((e: { outcome: string; action: string }) => [e.action, e.outcome]),
            [
              ['delete', 'committed'],
              ['create', 'committed'],
            ],
          )
          const history = await json(await call(second.base, 'GET', `/v1/zones/${zone}/history`))
          assert.equal(history.history[0].revision, created.revision)
        } finally {
          await second.child.stop()
        }
      } finally {
        dir.remove()
      }
    })
  }
})
