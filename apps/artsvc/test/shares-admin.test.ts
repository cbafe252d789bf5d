/**
 * Capability shares (pinning, view limits under concurrency, expiry, revocation) and the
 * administrator's powers with their audit records, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { type ApiSuite, apiSuites } from './helpers/api-suite.ts'
import { mustPublish } from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

apiSuites('shares and admin', (s: ApiSuite) => {
  test('shares pin a version, expire, count views atomically and stop at once when revoked', async () => {
    const p = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Shared' })
    const pinned = await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, {
      max_views: 5,
      label: 'five',
    })
    assert.equal(pinned.body.version, 1)
    assert.equal(pinned.body.status, 'active')
    assert.match(pinned.body.url, new RegExp(`^${s.h.base}/s/[A-Za-z0-9_-]{43}$`))
    const secret = pinned.body.url.split('/s/')[1]
    const stored = await s.h.svc.ctx.database.db
      .selectFrom('shares')
      .selectAll()
      .where('id', '=', pinned.body.id)
      .executeTakeFirstOrThrow()
    assert.ok(!JSON.stringify(stored).includes(secret))
    await mustPublish(s.h, s.auth.owner, sampleBundle([{ name: 'v2.txt', data: '2' }]), {
      title: 'Shared v2',
      artifact: p.artifact,
    })
    // 20 concurrent openings of a 5-view share: exactly 5 succeed.
    const results = await Promise.all(Array.from({ length: 20 }, () => fetch(pinned.body.url, { redirect: 'manual' })))
    const statuses = results.map((r) => r.status)
    assert.equal(statuses.filter((s) => s === 303).length, 5, statuses.join())
    assert.equal(statuses.filter((s) => s === 410).length, 15)
    const cookie = results.find((r) => r.status === 303)!.headers.getSetCookie()[0]!
    assert.match(cookie, /HttpOnly/i)
    assert.match(cookie, /Secure/i)
    assert.match(cookie, new RegExp(`Path=/shared/${pinned.body.id}`))
    const page = await fetch(`${s.h.base}/shared/${pinned.body.id}/`, { headers: { cookie: cookie.split(';')[0]! } })
    const html = await page.text()
    assert.equal(page.status, 200)
    assert.match(html, /version 1/)
    const frame = /<iframe[^>]*src="([^"]+)"/.exec(html)![1]!.replaceAll('&amp;', '&')
    assert.equal((await fetch(frame)).status, 200)
    assert.equal((await fetch(frame.replace('index.html', 'v2.txt'))).status, 404, 'pinned to version 1')
    const listed = await s.call('owner', 'GET', `/api/v1/artifacts/${p.artifact}/shares`)
    assert.equal(listed.body.shares[0].status, 'exhausted')
    assert.equal(listed.body.shares[0].views, 5)
    // Revocation stops the session and its tickets at once.
    assert.equal(
      (await s.call('owner', 'DELETE', `/api/v1/artifacts/${p.artifact}/shares/${pinned.body.id}`)).status,
      204,
    )
    assert.equal(
      (await fetch(`${s.h.base}/shared/${pinned.body.id}/`, { headers: { cookie: cookie.split(';')[0]! } })).status,
      410,
    )
    assert.equal((await fetch(frame)).status, 403)
    // Following the newest version, and expiry.
    const latest = await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, {
      follow_latest: true,
      expires_at: new Date(s.clock.now() + 60_000).toISOString(),
    })
    assert.equal(latest.body.follow_latest, true)
    const open = await fetch(latest.body.url, { redirect: 'manual' })
    const c2 = open.headers.getSetCookie()[0]!.split(';')[0]!
    const page2 = await (await fetch(`${s.h.base}/shared/${latest.body.id}/`, { headers: { cookie: c2 } })).text()
    assert.match(page2, /version 2/)
    s.clock.advance(61_000)
    try {
      assert.equal((await fetch(`${s.h.base}/shared/${latest.body.id}/`, { headers: { cookie: c2 } })).status, 410)
      assert.equal((await fetch(latest.body.url, { redirect: 'manual' })).status, 410)
    } finally {
      s.clock.advance(-61_000)
    }
    assert.equal(
      (await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, { expires_at: '2001-01-01T00:00:00Z' }))
        .status,
      400,
    )
    // RFC 3339 with an offset is read (kit parser) and written back in UTC with Z.
    const inAnHour = new Date(Math.floor((s.clock.now() + 3_600_000) / 1000) * 1000)
    const offset = `${new Date(inAnHour.getTime() + 2 * 3_600_000).toISOString().slice(0, 19)}+02:00`
    const offsetShare = await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, { expires_at: offset })
    assert.equal(offsetShare.status, 201, JSON.stringify(offsetShare.body))
    assert.equal(offsetShare.body.expires_at, inAnHour.toISOString())
    assert.equal((await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, { version: 9 })).status, 404)
    assert.equal((await fetch(`${s.h.base}/s/${'x'.repeat(43)}`, { redirect: 'manual' })).status, 404)
  })

  test('admins list everything, revoke any share and soft-delete without owner rights', async () => {
    const p = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Doomed' })
    const s1 = await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, {})
    const s2 = await s.call('owner', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, {})
    const list = await s.call('admin', 'GET', '/api/v1/admin/artifacts')
    const entry = list.body.artifacts.find((x: { id: string }) => x.id === p.artifact)
    assert.equal(entry.owner, 'alice')
    assert.deepEqual(entry.shares.map((s: { id: string }) => s.id).sort(), [s1.body.id, s2.body.id].sort())
    assert.equal((await s.call('admin', 'DELETE', `/api/v1/admin/shares/${s1.body.id}`)).status, 204)
    assert.equal((await fetch(s1.body.url, { redirect: 'manual' })).status, 410)
    // Viewer ticket issued before the delete stops working at once.
    const page = await (await fetch(`${s.h.base}/a/${p.artifact}`, { headers: s.auth.owner })).text()
    const frame = /<iframe[^>]*src="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    assert.equal((await fetch(frame)).status, 200)
    assert.equal((await s.call('groupAdmin', 'DELETE', `/api/v1/admin/artifacts/${p.artifact}`)).status, 204)
    assert.equal((await fetch(frame)).status, 403)
    assert.equal((await s.call('owner', 'GET', `/api/v1/artifacts/${p.artifact}`)).status, 404)
    assert.equal((await fetch(s2.body.url, { redirect: 'manual' })).status, 410)
    const after = await s.call('admin', 'GET', '/api/v1/admin/artifacts')
    assert.ok(!after.body.artifacts.some((x: { id: string }) => x.id === p.artifact))
    assert.equal((await s.call('admin', 'DELETE', `/api/v1/admin/artifacts/${p.artifact}`)).status, 404)
    // Files stay for an operator: the blobs are still on disk.
    const files = await s.h.svc.ctx.database.db
      .selectFrom('version_files')
      .innerJoin('versions', 'versions.id', 'version_files.version_id')
      .select('sha256')
      .where('versions.artifact_id', '=', p.artifact)
      .execute()
    for (const f of files) assert.ok(existsSync(join(s.h.root, 'objects', f.sha256.slice(0, 2), f.sha256.slice(2))))
    const audit = await s.call('admin', 'GET', '/api/v1/admin/audit')
    const actions = audit.body.events.map((e: { action: string; target_id: string }) => `${e.action}:${e.target_id}`)
    assert.ok(actions.includes(`admin.artifact.delete:${p.artifact}`))
    assert.ok(actions.includes(`admin.share.revoke:${s1.body.id}`))
    assert.ok(actions.includes(`version.publish:${p.artifact}`))
    const del = audit.body.events.find((e: { action: string }) => e.action === 'admin.artifact.delete')
    assert.equal(del.actor, 'erin')
    assert.equal(del.details.shares_revoked, 1)
  })
})
