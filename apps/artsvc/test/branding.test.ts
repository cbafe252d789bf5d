/**
 * Branding themes over REST and MCP on SQLite and PostgreSQL: images checked by magic
 * bytes and size, the 50-theme limit, one active theme, the active-theme refusal, favicon
 * fallback to the logo, images served with their sniffed type, audit records, and who may
 * do what (anonymous, user, administrator).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { sniffImage } from '../src/branding/images.ts'
import { type ApiSuite, apiSuites } from './helpers/api-suite.ts'
import { connectMcp } from './helpers/mcp-client.ts'

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(40, 1)])
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(40, 2)])
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 '), Buffer.alloc(20)])
const palette = { primary: '#112233', background: '#ffffff', text: '#000000' }
const theme = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  site_name: `Site ${name}`,
  message: 'Hello <b>not html</b>',
  palette,
  ...extra,
})

test('image sniffing: only PNG, JPEG and WebP magic bytes; never a crash on any input', () => {
  assert.equal(sniffImage(PNG), 'image/png')
  assert.equal(sniffImage(JPEG), 'image/jpeg')
  assert.equal(sniffImage(WEBP), 'image/webp')
  assert.equal(sniffImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')), undefined)
  assert.equal(sniffImage(Buffer.from('GIF89a')), undefined)
  assert.equal(sniffImage(PNG.subarray(0, 7)), undefined)
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const t = sniffImage(Buffer.from(bytes))
      assert.ok(t === undefined || ['image/png', 'image/jpeg', 'image/webp'].includes(t))
    }),
  )
})

apiSuites('branding', (s: ApiSuite) => {
  test('who may read and change branding', async () => {
    assert.equal((await s.call('anon', 'GET', '/api/v1/branding')).status, 401)
    assert.deepEqual((await s.call('other', 'GET', '/api/v1/branding')).body, { theme: null })
    assert.equal((await s.call('anon', 'GET', '/api/v1/admin/branding')).status, 401)
    assert.equal((await s.call('owner', 'GET', '/api/v1/admin/branding')).status, 403)
    assert.equal((await s.call('owner', 'PUT', '/api/v1/admin/branding', { theme: theme('x') })).status, 403)
    assert.equal((await s.call('owner', 'DELETE', '/api/v1/admin/branding/themes/x')).status, 403)
    assert.equal((await s.call('admin', 'GET', '/api/v1/admin/branding')).status, 200)
  })

  test('save, activate, favicon fallback, images by magic bytes, the active theme cannot be deleted', async () => {
    const saved = await s.call('admin', 'PUT', '/api/v1/admin/branding', {
      theme: theme('blue', { logo: { base64: PNG.toString('base64') } }),
      activate: 'blue',
    })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    assert.equal(saved.body.active, 'blue')
    const blue = saved.body.themes.find((t: { name: string }) => t.name === 'blue')
    assert.equal(blue.favicon_url, blue.logo_url, 'without a favicon the logo is the fallback')
    const img = await fetch(blue.logo_url)
    assert.equal(img.headers.get('content-type'), 'image/png')
    assert.equal(img.headers.get('x-content-type-options'), 'nosniff')
    assert.deepEqual(Buffer.from(await img.arrayBuffer()), PNG)
    // Users see the active theme; its message is plain text in JSON.
    const active = await s.call('viewer', 'GET', '/api/v1/branding')
    assert.equal(active.body.theme.name, 'blue')
    assert.equal(active.body.theme.message, 'Hello <b>not html</b>')

    // A second theme with a separate favicon (JPEG) and a WebP logo.
    const green = await s.call('groupAdmin', 'PUT', '/api/v1/admin/branding', {
      theme: theme('green', {
        logo: { base64: WEBP.toString('base64') },
        favicon: { base64: JPEG.toString('base64') },
      }),
    })
    assert.equal(green.status, 200)
    const g = green.body.themes.find((t: { name: string }) => t.name === 'green')
    assert.notEqual(g.favicon_url, g.logo_url)
    assert.equal((await fetch(g.favicon_url)).headers.get('content-type'), 'image/jpeg')
    assert.equal(green.body.active, 'blue')

    // Refusals: the active theme, a non-image, an oversized image, bad colours, unknown theme.
    const refuse = await s.call('admin', 'DELETE', '/api/v1/admin/branding/themes/blue')
    assert.equal(refuse.status, 409)
    assert.equal(refuse.body.error.code, 'theme_active')
    const svg = await s.call('admin', 'PUT', '/api/v1/admin/branding', {
      theme: theme('svg', { logo: { base64: Buffer.from('<svg onload="x"/>').toString('base64') } }),
    })
    assert.equal(svg.body.error.code, 'branding_invalid')
    const big = Buffer.concat([PNG, Buffer.alloc(512 * 1024)])
    const large = await s.call('admin', 'PUT', '/api/v1/admin/branding', {
      theme: theme('big', { logo: { base64: big.toString('base64') } }),
    })
    assert.equal(large.status, 400)
    assert.match(large.body.error.message, /512 KiB/)
    const badColor = await s.call('admin', 'PUT', '/api/v1/admin/branding', {
      theme: theme('bad', { palette: { ...palette, primary: 'red' } }),
    })
    assert.equal(badColor.status, 400)
    assert.equal((await s.call('admin', 'PUT', '/api/v1/admin/branding', { activate: 'nope' })).status, 404)
    const names = (await s.call('admin', 'GET', '/api/v1/admin/branding')).body.themes.map(
      (t: { name: string }) => t.name,
    )
    assert.deepEqual(names, ['blue', 'green'], 'refused themes are not saved')

    // Activate green, then blue can go; its image goes with it (green does not use it).
    assert.equal((await s.call('admin', 'PUT', '/api/v1/admin/branding', { activate: 'green' })).body.active, 'green')
    assert.equal((await s.call('admin', 'DELETE', '/api/v1/admin/branding/themes/blue')).status, 204)
    assert.equal((await fetch(blue.logo_url)).status, 404)
    assert.equal((await s.call('admin', 'DELETE', '/api/v1/admin/branding/themes/blue')).status, 404)

    const audit = await s.call('admin', 'GET', '/api/v1/admin/audit?limit=100')
    const actions = audit.body.events.filter((e: { target_type: string }) => e.target_type === 'theme')
    for (const a of ['branding.save', 'branding.activate', 'branding.delete'])
      assert.ok(
        actions.some((e: { action: string }) => e.action === a),
        a,
      )
  })

  test('at most 50 themes; branding through MCP for users and administrators', async () => {
    const existing = (await s.call('admin', 'GET', '/api/v1/admin/branding')).body.themes.length as number
    for (let i = existing; i < 50; i++) {
      const r = await s.call('admin', 'PUT', '/api/v1/admin/branding', { theme: theme(`t${i}`) })
      assert.equal(r.status, 200)
    }
    const over = await s.call('admin', 'PUT', '/api/v1/admin/branding', { theme: theme('one-too-many') })
    assert.equal(over.status, 409)
    assert.equal(over.body.error.code, 'theme_limit')
    // Replacing a saved theme is not a new one.
    assert.equal((await s.call('admin', 'PUT', '/api/v1/admin/branding', { theme: theme('t49') })).status, 200)

    const admin = await connectMcp(s.h.base, s.auth.admin)
    const user = await connectMcp(s.h.base, s.auth.other)
    try {
      assert.equal((await user.call('artsvc_get_branding')).out.theme.name, 'green')
      const listed = await admin.call('artsvc_admin_get_branding')
      assert.equal(listed.out.themes.length, 50)
      assert.equal(listed.out.limits.max_themes, 50)
      assert.equal((await admin.call('artsvc_admin_update_branding', { ...theme('more') })).error?.code, 'theme_limit')
      assert.equal(
        (await admin.call('artsvc_admin_delete_branding_theme', { name: 'green' })).error?.code,
        'theme_active',
      )
      assert.deepEqual((await admin.call('artsvc_admin_delete_branding_theme', { name: 't49' })).out, {
        theme: 't49',
        deleted: true,
      })
      const saved = await admin.call('artsvc_admin_update_branding', {
        ...theme('mcp'),
        logo: { base64: PNG.toString('base64') },
        activate: true,
      })
      assert.ok(saved.ok, JSON.stringify(saved.error))
      assert.equal(saved.out.active, true)
      assert.equal((await user.call('artsvc_get_branding')).out.theme.name, 'mcp')
      const bad = await admin.call('artsvc_admin_update_branding', { ...theme('x'), logo: { base64: 'R0lGODlh' } })
      assert.equal(bad.error?.code, 'branding_invalid')
      const back = await admin.call('artsvc_admin_activate_branding_theme', { name: 'green' })
      assert.equal(back.out.name, 'green')
      assert.equal(
        (await admin.call('artsvc_admin_activate_branding_theme', { name: 'nope' })).error?.code,
        'theme_not_found',
      )
      // Users cannot reach the admin tools.
      assert.ok(!(await user.tools()).includes('artsvc_admin_update_branding'))
    } finally {
      await admin.close()
      await user.close()
    }
  })

  test('the 50-theme limit holds under concurrent first saves', async () => {
    const listed = async () =>
      (await s.call('admin', 'GET', '/api/v1/admin/branding')).body.themes as { name: string }[]
    const before = await listed()
    assert.equal(before.length, 50, 'the previous test leaves the limit reached')
    // Free two places, then race eight new names for them.
    for (const name of ['t10', 't11'])
      assert.equal((await s.call('admin', 'DELETE', `/api/v1/admin/branding/themes/${name}`)).status, 204)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        s.call('admin', 'PUT', '/api/v1/admin/branding', { theme: theme(`race${i}`) }),
      ),
    )
    const statuses = results.map((r) => r.status).sort()
    assert.deepEqual(statuses, [200, 200, 409, 409, 409, 409, 409, 409])
    for (const r of results) if (r.status === 409) assert.equal(r.body.error.code, 'theme_limit')
    assert.equal((await listed()).length, 50)
  })
})
