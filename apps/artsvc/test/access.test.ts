/**
 * Authorization for every endpoint and role (anonymous, other user, owner, editor, viewer,
 * admin by subject and by group, share cookie), visibility and private grants, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { type ApiSuite, apiSuites, json, type Loose, type Who } from './helpers/api-suite.ts'
import { mustPublish, publishZip } from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

apiSuites('access control', (s: ApiSuite) => {
  test('authorization matrix: every endpoint and role', async () => {
    const a = s.art.artifact
    const share = await s.call('owner', 'POST', `/api/v1/artifacts/${a}/shares`, {})
    assert.equal(share.status, 201)
    const matrix: [string, string, unknown, Partial<Record<Who, number>>][] = [
      ['GET', '/api/v1/me', undefined, { anon: 401, other: 200 }],
      ['GET', '/api/v1/artifacts', undefined, { anon: 401, other: 200, admin: 200 }],
      [
        'GET',
        `/api/v1/artifacts/${a}`,
        undefined,
        { anon: 401, other: 404, admin: 404, groupAdmin: 404, viewer: 200, editor: 200, owner: 200 },
      ],
      [
        'GET',
        `/api/v1/artifacts/${a}/versions/1`,
        undefined,
        { anon: 401, other: 404, admin: 404, viewer: 200, editor: 200, owner: 200 },
      ],
      [
        'PUT',
        `/api/v1/artifacts/${a}/visibility`,
        { visibility: 'private' },
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 200 },
      ],
      [
        'GET',
        `/api/v1/artifacts/${a}/grants`,
        undefined,
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 200 },
      ],
      [
        'PUT',
        `/api/v1/artifacts/${a}/grants`,
        { subject: 'carol', role: 'viewer' },
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 200 },
      ],
      [
        'GET',
        `/api/v1/artifacts/${a}/shares`,
        undefined,
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 200 },
      ],
      [
        'POST',
        `/api/v1/artifacts/${a}/shares`,
        {},
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 201 },
      ],
      [
        'DELETE',
        `/api/v1/artifacts/${a}/shares/AAAAAAAAAAAAAAAA`,
        undefined,
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 404 },
      ],
      [
        'DELETE',
        `/api/v1/artifacts/${a}/grants/AAAAAAAAAAAAAAAA`,
        undefined,
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 403, owner: 404 },
      ],
      [
        'POST',
        '/api/v1/artifacts/uploads',
        { title: 'x', entrypoint: 'index.html', artifact: a },
        { anon: 401, other: 404, admin: 404, viewer: 403, editor: 201, owner: 201 },
      ],
      [
        'POST',
        '/api/v1/artifacts/uploads',
        { title: 'x', entrypoint: 'index.html' },
        { anon: 401, other: 201, admin: 201 },
      ],
      ['POST', '/api/v1/uploads/AAAAAAAAAAAAAAAA/commit', undefined, { anon: 401, owner: 401 }],
      [
        'GET',
        '/api/v1/admin/artifacts',
        undefined,
        { anon: 401, owner: 403, editor: 403, other: 403, admin: 200, groupAdmin: 200 },
      ],
      ['GET', '/api/v1/admin/audit', undefined, { anon: 401, owner: 403, admin: 200, groupAdmin: 200 }],
      ['DELETE', '/api/v1/admin/shares/AAAAAAAAAAAAAAAA', undefined, { anon: 401, owner: 403, other: 403, admin: 404 }],
      [
        'DELETE',
        '/api/v1/admin/artifacts/AAAAAAAAAAAAAAAA',
        undefined,
        { anon: 401, owner: 403, other: 403, admin: 404 },
      ],
      ['GET', `/a/${a}`, undefined, { anon: 302, other: 404, admin: 404, viewer: 200, editor: 200, owner: 200 }],
      ['GET', `/shared/${share.body.id}/`, undefined, { anon: 401, owner: 401, admin: 401 }],
      ['GET', '/', undefined, { anon: 200, owner: 200, admin: 200 }],
      ['GET', '/admin', undefined, { anon: 302, owner: 403, editor: 403, other: 403, admin: 200, groupAdmin: 200 }],
      ['GET', '/static/app/app.css', undefined, { anon: 200, owner: 200 }],
      ['GET', '/branding/theme.css', undefined, { anon: 200, owner: 200 }],
      ['GET', '/api/v1/auth/login', undefined, { anon: 302, owner: 302 }],
      ['POST', '/api/v1/auth/logout', undefined, { anon: 204, owner: 204 }],
      ['GET', '/api/v1/auth/oidc/callback?state=x&code=y', undefined, { anon: 400, owner: 400 }],
      ['PUT', '/upload/AAAAAAAAAAAAAAAA', undefined, { anon: 401, owner: 401, admin: 401 }],
    ]
    for (const [method, path, body, expect] of matrix) {
      for (const [who, status] of Object.entries(expect) as [Who, number][]) {
        const r = await s.call(who, method, path, body)
        assert.equal(r.status, status, `${who} ${method} ${path}: ${JSON.stringify(r.body)}`)
        // Browser pages answer refusals with a page; the API with the JSON error.
        if (status >= 400 && !path.startsWith('/a/') && !path.startsWith('/shared/') && path !== '/admin')
          assert.match(r.body.error.code, /^[a-z_]+$/)
      }
    }
    // A share-session cookie opens only its own /shared/ page, nothing else.
    const entry = await fetch(share.body.url, { redirect: 'manual' })
    assert.equal(entry.status, 303)
    const cookie = entry.headers.getSetCookie()[0]!.split(';')[0]!
    assert.equal((await s.call('anon', 'GET', `/shared/${share.body.id}/`, undefined, { cookie })).status, 200)
    assert.equal((await s.call('anon', 'GET', `/api/v1/artifacts/${a}`, undefined, { cookie })).status, 401)
    assert.equal((await s.call('anon', 'GET', `/a/${a}`, undefined, { cookie })).status, 302)
    const other = await s.call('owner', 'POST', `/api/v1/artifacts/${a}/shares`, {})
    assert.equal((await s.call('anon', 'GET', `/shared/${other.body.id}/`, undefined, { cookie })).status, 401)
    // The content origin accepts only valid tickets.
    const bad = await fetch(`${s.h.content}/t/not.a.ticket.value/index.html`)
    assert.equal(bad.status, 403)
    assert.equal((await json(bad)).error.code, 'ticket_invalid')
  })

  test('visibility authenticated makes an artifact readable and listed for every account', async () => {
    const p = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Public-ish' })
    assert.equal((await s.call('other', 'GET', `/api/v1/artifacts/${p.artifact}`)).status, 404)
    const listed = async () =>
      (await s.call('other', 'GET', '/api/v1/artifacts')).body.artifacts.map((x: { id: string }) => x.id)
    assert.ok(!(await listed()).includes(p.artifact))
    const entry = async () =>
      (await s.call('owner', 'GET', '/api/v1/artifacts')).body.artifacts.find((x: Loose) => x.id === p.artifact)
    const before = await entry()
    assert.equal(before.latest_version_at, before.updated_at, 'the newest version is the last change so far')
    s.clock.advance(5_000)
    const r = await s.call('owner', 'PUT', `/api/v1/artifacts/${p.artifact}/visibility`, {
      visibility: 'authenticated',
    })
    assert.equal(r.body.visibility, 'authenticated')
    // A visibility change is an update but not a version: the library sorts by the version time.
    const afterChange = await entry()
    assert.equal(afterChange.latest_version_at, before.latest_version_at)
    assert.notEqual(afterChange.updated_at, before.updated_at)
    assert.equal((await s.call('other', 'GET', `/api/v1/artifacts/${p.artifact}`)).body.role, 'reader')
    assert.ok((await listed()).includes(p.artifact))
    assert.equal((await s.call('other', 'GET', `/a/${p.artifact}`)).status, 200)
    // Readers cannot publish or share.
    assert.equal(
      (
        await s.call('other', 'POST', '/api/v1/artifacts/uploads', {
          title: 'x',
          entrypoint: 'index.html',
          artifact: p.artifact,
        })
      ).status,
      403,
    )
    assert.equal((await s.call('other', 'POST', `/api/v1/artifacts/${p.artifact}/shares`, {})).status, 403)
    assert.equal(
      (await s.call('owner', 'PUT', `/api/v1/artifacts/${p.artifact}/visibility`, { visibility: 'public' })).status,
      400,
    )
  })

  test('grants: editors publish versions, grants can be removed, unknown subjects refused', async () => {
    const p = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Team' })
    assert.equal(
      (
        await s.call('owner', 'PUT', `/api/v1/artifacts/${p.artifact}/grants`, {
          subject: 'nobody-yet',
          role: 'viewer',
        })
      ).status,
      404,
    )
    const g = await s.call('owner', 'PUT', `/api/v1/artifacts/${p.artifact}/grants`, { subject: 'bob', role: 'editor' })
    const v2 = await mustPublish(s.h, s.auth.editor, sampleBundle(), { title: 'Team v2', artifact: p.artifact })
    assert.equal(v2.version, 2)
    const detail = await s.call('editor', 'GET', `/api/v1/artifacts/${p.artifact}`)
    assert.equal(detail.body.role, 'editor')
    assert.equal((await s.call('owner', 'DELETE', `/api/v1/artifacts/${p.artifact}/grants/${g.body.user}`)).status, 204)
    assert.equal((await s.call('editor', 'GET', `/api/v1/artifacts/${p.artifact}`)).status, 404)
    // Administrators cannot publish for others.
    assert.equal((await publishZip(s.h, s.auth.admin, sampleBundle(), { artifact: p.artifact })).status, 404)
  })
})
