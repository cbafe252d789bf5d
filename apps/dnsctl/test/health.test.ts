import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, beforeEach, describe, test } from 'node:test'
import { type Harness, json, startHarness } from './helpers.ts'

const NOW = new Date('2026-11-22T12:00:00.000Z')
const ago = (hours: number) => new Date(NOW.getTime() - hours * 3600_000).toISOString()
const ahead = (hours: number) => new Date(NOW.getTime() + hours * 3600_000).toISOString()

describe('refresh status and metrics (fixture result files)', () => {
  let h: Harness
  let dir: string
  before(async () => {
    h = await startHarness({ now: () => NOW })
    dir = h.config.resultsDir
    mkdirSync(dir, { recursive: true })
  })
  after(() => h.close())

  function write(results: { zt?: object; bl?: object; dc?: object }) {
    if (results.zt) writeFileSync(join(dir, 'zone-transfer.json'), JSON.stringify(results.zt))
    if (results.bl) writeFileSync(join(dir, 'blocklist-refresh.json'), JSON.stringify(results.bl))
    if (results.dc) writeFileSync(join(dir, 'differential-check.json'), JSON.stringify(results.dc))
  }
  const healthy = () => ({
    zt: { finished_at: ago(0.5), ok: true, last_success_at: ago(0.5), earliest_rrsig_expiry: ahead(100) },
    bl: { finished_at: ago(3), ok: true, last_success_at: ago(3), domain_count: 123456 },
    dc: { checked_at: ago(0.5), mismatches: 0 },
  })
  beforeEach(() => write(healthy()))

  async function status() {
    const res = await h.call('GET', '/v1/status/refresh')
    assert.equal(res.status, 200)
    return json(res)
  }

  test('all fresh and successful: healthy', async () => {
    const s = await status()
    assert.equal(s.healthy, true, JSON.stringify(s.problems))
    assert.deepEqual(s.problems, [])
    assert.equal(s.blocklist_refresh.domain_count, 123456)
  })

  test('each rule on its own makes the status unhealthy', async () => {
    const base = healthy()
    const cases: [object, RegExp][] = [
      [
        { zt: { ...base.zt, ok: false, error: 'AXFR refused', last_success_at: ago(1) } },
        /zone transfer failed: AXFR refused/,
      ],
      [{ bl: { ...base.bl, ok: false, error: 'HTTP 500' } }, /blocklist refresh failed/],
      [{ zt: { ...base.zt, last_success_at: ago(2.01) } }, /zone data is more than 2 hours old/],
      [{ bl: { ...base.bl, last_success_at: ago(26.01) } }, /blocklist data is more than 26 hours old/],
      [{ zt: { ...base.zt, earliest_rrsig_expiry: ahead(11.9) } }, /signature expires within 12 hours/],
      [{ dc: { checked_at: ago(0.1), mismatches: 2 } }, /found 2 mismatches/],
      [{ dc: { checked_at: ago(2.01), mismatches: 0 } }, /check is more than 2 hours old/],
      [{ zt: { ...base.zt, finished_at: 'yesterday' } }, /zone-transfer result file is invalid: finished_at/],
    ]
    for (const [override, problem] of cases) {
      write(healthy())
      write(override)
      const s = await status()
      assert.equal(s.healthy, false, JSON.stringify(override))
      assert.equal(s.problems.length, 1, JSON.stringify(s.problems))
      assert.match(s.problems[0], problem)
    }
  })

  test('the limits are inclusive of the boundary: exactly 2 h, 26 h and 12 h are still healthy', async () => {
    const base = healthy()
    write({
      zt: { ...base.zt, last_success_at: ago(2), earliest_rrsig_expiry: ahead(12) },
      bl: { ...base.bl, last_success_at: ago(26) },
      dc: { checked_at: ago(2), mismatches: 0 },
    })
    assert.equal((await status()).healthy, true)
  })

  test('metrics expose last-success timestamps, domain count and earliest RRSIG expiry', async () => {
    const res = await h.call('GET', '/metrics')
    const text = await res.text()
    const value = (name: string) => Number(new RegExp(`^dnsctl_${name} (\\S+)$`, 'm').exec(text)?.[1])
    assert.equal(value('refresh_healthy'), 1)
    assert.equal(value('blocklist_domains'), 123456)
    assert.equal(value('zone_transfer_last_success_timestamp_seconds'), Date.parse(ago(0.5)) / 1000)
    assert.equal(value('blocklist_refresh_last_success_timestamp_seconds'), Date.parse(ago(3)) / 1000)
    assert.equal(value('rrsig_earliest_expiry_timestamp_seconds'), Date.parse(ahead(100)) / 1000)
  })
})

describe('refresh status without any results', () => {
  test('missing results are unhealthy, never assumed fine', async () => {
    const h = await startHarness()
    try {
      const s = await json(await h.call('GET', '/v1/status/refresh'))
      assert.equal(s.healthy, false)
      assert.deepEqual(s.problems, [
        'no zone-transfer result yet',
        'no blocklist refresh result yet',
        'no differential check result yet',
      ])
      const text = await (await h.call('GET', '/metrics')).text()
      assert.match(text, /^dnsctl_refresh_healthy 0$/m)
    } finally {
      await h.close()
    }
  })
})
