import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { migrate, openDatabase, sql } from '@gatehouse/kit'
import { tempDir } from '@gatehouse/testkit'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { findHistory, listHistory, saveHistory } from '../src/zones/store.ts'
import { type Harness, json, startHarness, ZONE, zoneText } from './helpers.ts'
import { cli } from './processes.ts'

describe('the history store over HTTP', () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  async function upsert(revision: string, address: string): Promise<Record<string, string>> {
    const res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'www', type: 'A', ttl: 300, records: [address] }] },
      { 'if-match': `"${revision}"` },
    )
    const body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    return body
  }

  test('a prior revision comes back with its text, and PUT of that text rolls the zone back', async () => {
    let res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(1) })
    const created = await json(res)
    assert.equal(res.status, 201)
    const originalText = (await json(await h.call('GET', `/v1/zones/${ZONE}`))).zone_text as string

    let revision = created.revision as string
    const revisions = [revision]
    for (let i = 0; i < 5; i++) {
      revision = (await upsert(revision, `192.0.2.${100 + i}`)).revision!
      revisions.push(revision)
    }

    // Paged newest first: 5 saved revisions (the current one is not history), 2 per page.
    const seen: string[] = []
    let before: number | null | undefined
    let pages = 0
    do {
      const query = before === undefined ? '?limit=2' : `?limit=2&before=${before}`
      const page = await json(await h.call('GET', `/v1/zones/${ZONE}/history${query}`))
      for (const item of page.history) {
        assert.equal(item.replaced_by, 'changes')
        assert.ok(item.bytes > 100, `bytes: ${item.bytes}`)
        seen.push(item.revision)
      }
      before = page.next_before
      pages++
    } while (before !== null)
    assert.deepEqual(seen, revisions.slice(0, 5).reverse())
    assert.equal(pages, 3)

    // The first revision, byte for byte what GET /v1/zones/{zone} answered back then.
    res = await h.call('GET', `/v1/zones/${ZONE}/history/${created.revision}`)
    const entry = await json(res)
    assert.equal(res.status, 200, JSON.stringify(entry))
    assert.equal(entry.zone_text, originalText)
    assert.equal(entry.serial, 1)
    assert.equal(entry.role, 'primary')

    // Manual rollback: import the old text over the current revision; the serial still advances.
    res = await h.call(
      'PUT',
      `/v1/zones/${ZONE}`,
      { role: 'primary', zone_text: entry.zone_text },
      { 'if-match': `"${revision}"` },
    )
    const rolledBack = await json(res)
    assert.equal(res.status, 200, JSON.stringify(rolledBack))
    assert.equal(rolledBack.serial, 7)
    assert.equal(await h.knot.soaSerial(ZONE), 7)
    const rrsets = await json(await h.call('GET', `/v1/zones/${ZONE}/rrsets`))
    assert.deepEqual(
      rrsets.rrsets.find((s: { name: string; type: string }) => s.name === 'www' && s.type === 'A').records,
      ['192.0.2.10'],
    )

    // The audit listing pages the same way.
    const audit = await json(await h.call('GET', `/v1/zones/${ZONE}/audit?limit=3`))
    assert.equal(audit.events.length, 3)
    assert.equal(audit.events[0].action, 'import')
    const rest = await json(await h.call('GET', `/v1/zones/${ZONE}/audit?before=${audit.next_before}`))
    assert.deepEqual(
      rest.events.map((e: { action: string }) => e.action),
      ['changes', 'changes', 'changes', 'create'],
    )
    assert.equal(rest.next_before, null)
  })

  test('refusals: an unknown revision is 404, bad paging parameters 400', async () => {
    let res = await h.call('GET', `/v1/zones/${ZONE}/history/AAAAAAAAAAAAAAAAAAAAAAAAAAA`)
    assert.equal(res.status, 404)
    assert.equal((await json(res)).error.code, 'revision_not_in_history')
    for (const query of ['?limit=0', '?limit=1001', '?before=x', '?page=2']) {
      res = await h.call('GET', `/v1/zones/${ZONE}/history${query}`)
      assert.equal(res.status, 400, query)
      assert.equal((await json(res)).error.code, 'invalid_request', query)
    }
  })

  test('dnsctl rollback SERIAL finds a revision past the newest 1000 of the history', async () => {
    const listed = await json(await h.call('GET', `/v1/zones/${ZONE}/history?limit=1000`))
    const oldest = listed.history.at(-1) as { serial: number; revision: string }
    const saved_at = new Date().toISOString()
    for (let i = 0; i < 1000; i++) {
      await saveHistory(h.db, {
        zone: `${ZONE}.`,
        revision: `filler${String(i).padStart(21, '0')}`,
        role: 'primary',
        serial: 500_000 + i,
        zone_text: zoneText(500_000 + i),
        saved_at,
        request_id: 'filler',
        reason: 'changes',
      })
    }
    const r = await cli(['rollback', '--dry-run', ZONE, String(oldest.serial)], { DNSCTL_URL: h.base })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^example\.test: \d+ to add, \d+ to remove/)
    const none = await cli(['rollback', '--dry-run', ZONE, '499999'], { DNSCTL_URL: h.base })
    assert.deepEqual(
      [none.code, none.stderr],
      [1, `dnsctl: the history of ${ZONE} holds no revision with serial 499999 (dnsctl history ${ZONE} lists them)\n`],
    )
  })
})

describe('migration 0002: history compressed in place', () => {
  test('rows saved as plain text before the migration read back unchanged', async () => {
    const dir = tempDir('dnsctl-migrate-')
    const { db, close } = await openDatabase<DB>({ url: `sqlite:${dir.path}/dnsctl.db` })
    try {
      await migrate(db, { '0001_init': migrations['0001_init']! })
      const texts = [zoneText(1), zoneText(2, 'extra 60 IN TXT "ünïcode and \\"quotes\\""\n')]
      for (const [i, text] of texts.entries()) {
        await sql`insert into zone_history (zone, revision, role, serial, zone_text, saved_at, request_id, reason)
          values ('example.test.', ${`rev${i}`}, 'primary', ${i + 1}, ${text}, '2026-01-01T00:00:00Z', ${`req${i}`}, 'changes')`.execute(
          db,
        )
      }
      await migrate(db, migrations)

      for (const [i, text] of texts.entries()) {
        const entry = await findHistory(db, 'example.test.', `rev${i}`)
        assert.equal(entry?.zone_text, text)
        assert.equal(entry?.zone_bytes, Buffer.byteLength(text))
        assert.equal(entry?.request_id, `req${i}`)
      }
      const listed = await listHistory(db, 'example.test.', { limit: 10 })
      assert.deepEqual(
        listed.map((r) => r.revision),
        ['rev1', 'rev0'],
      )
      // Stored as standard gzip: an operator can export and unzip a blob with common tools.
      const raw = await sql<{
        zone_gzip: Uint8Array
      }>`select zone_gzip from zone_history where revision = 'rev1'`.execute(db)
      assert.equal(gunzipSync(raw.rows[0]!.zone_gzip).toString('utf8'), texts[1])
    } finally {
      await close()
      dir.remove()
    }
  })
})
