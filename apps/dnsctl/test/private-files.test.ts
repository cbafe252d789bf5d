/** DNS history and the publication journal are owner-only on disk (0600 database, 0700 journal). */
import assert from 'node:assert/strict'
import { statSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { type Harness, startHarness, ZONE, zoneText } from './helpers.ts'

describe('dnsctl state modes', () => {
  let h: Harness
  let umask: number
  before(async () => {
    umask = process.umask(0o022)
    h = await startHarness()
  })
  after(async () => {
    await h.close()
    process.umask(umask)
  })

  test('the database is 0600 and the journal folder 0700 under the usual umask', async () => {
    const res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(3) })
    assert.equal(res.status, 201)
    assert.equal(statSync(h.config.database.replace(/^sqlite:/, '')).mode & 0o777, 0o600)
    assert.equal(statSync(h.config.journalDir).mode & 0o777, 0o700)
  })
})
