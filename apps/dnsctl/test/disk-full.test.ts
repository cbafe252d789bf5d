/**
 * The state folder's disk fills up under a running dnsctl (a small tmpfs holding its database
 * and publication journal): a change answers 503 with Retry-After and reaches neither Knot nor
 * the history, and once space is freed the next change is published as usual. The state disk
 * failing (ext4 turns read-only after a disk error): the same answer, and reads go on.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { mountFailingDisk, mountSmallDisk, startKnot } from '@gatehouse/testkit'
import { json, startHarness, ZONE, zoneText } from './helpers.ts'

/** Knot and a dnsctl whose state folder is on `disk`, with one zone published; all removed after the test. */
async function zoneOnDisk(t: TestContext, disk: { path: string; remove(): void }) {
  const knot = await startKnot()
  const h = await startHarness({ knot, env: { DNSCTL_STATE_DIR: join(disk.path, 'state') } })
  t.after(async () => {
    await h.close()
    await knot.stop()
    disk.remove()
  })
  assert.equal((await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(10) })).status, 201)
  return { knot, h, before: await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`)) }
}

test('a full state disk: changes answer 503 and reach nothing; published again once space is freed', async (t) => {
  const disk = mountSmallDisk('dnsctl-full-', 4)
  const { knot, h, before } = await zoneOnDisk(t, disk)

  disk.fill()
  const change = (name: string, revision: string) =>
    h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name, type: 'TXT', ttl: 60, records: [`"${'y'.repeat(200)}"`] }] },
      { 'if-match': `"${revision}"` },
    )
  for (const name of ['full1', 'full2']) {
    const refused = await change(name, before.revision)
    assert.equal(refused.status, 503)
    assert.equal(refused.headers.get('retry-after'), '5')
    assert.deepEqual((await json(refused)).error, { code: 'unavailable', message: 'storage is unavailable' })
  }
  // Neither Knot nor dnsctl moved.
  assert.equal(await knot.soaSerial(ZONE), 10)
  assert.equal(await knot.kdig(`full1.${ZONE}`, 'TXT', '+short'), '')
  assert.deepEqual(await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`)), before)

  disk.free()
  const published = await change('after', before.revision)
  const body = await json(published)
  assert.equal(published.status, 200, JSON.stringify(body))
  assert.equal(body.serial, 11)
  assert.equal(await knot.soaSerial(ZONE), 11)
  assert.match(await knot.kdig(`after.${ZONE}`, 'TXT', '+short'), /y{200}/)
})

test('a failing state disk: changes answer 503 and reach nothing; the zone is still read', async (t) => {
  const disk = mountFailingDisk('dnsctl-failing-')
  const { knot, h, before } = await zoneOnDisk(t, disk)

  disk.fail()
  const refused = await h.call(
    'POST',
    `/v1/zones/${ZONE}/changes`,
    { changes: [{ action: 'upsert', name: 'failed', type: 'TXT', ttl: 60, records: ['"x"'] }] },
    { 'if-match': `"${before.revision}"` },
  )
  assert.equal(refused.status, 503)
  assert.equal(refused.headers.get('retry-after'), '5')
  assert.equal((await json(refused)).error.code, 'unavailable')
  assert.equal(await knot.soaSerial(ZONE), 10)
  assert.equal(await knot.kdig(`failed.${ZONE}`, 'TXT', '+short'), '')
  assert.deepEqual(await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`)), before)
})
