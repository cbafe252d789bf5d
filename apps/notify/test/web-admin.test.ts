/**
 * The web client's channel views in Debian's Chromium: unread counts in the navigation
 * (live), compatibility markdown rendered safely, a channel admin editing their channel and
 * its members (not its visibility), and the administrator's webhook import with a dry-run
 * preview. Screenshots: test-output/unread.png, channels.png, import.png.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { confirmAction, signIn } from './browser.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, member, reader, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })

const navButton = (page: Page, name: string) => page.locator('nav li button', { hasText: name })

for (const backend of backends) {
  test(`unread counts, markdown, channel admin and webhook import (${backend.name})`, async (t) => {
    const n = await startNotify(backend)
    t.after(() => n.close())
    const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    const ops = await channel(n, admin, 'ops')
    await reader(n, admin, 'vera')
    await reader(n, admin, 'otto')
    await member(n, admin, 'ops', 'vera', 'channel_admin')
    const hook = async (text: string) => {
      const res = await n.client.post(`/hooks/${ops.token}`, { body: { text } })
      assert.equal(res.status, 200, res.text)
    }
    await hook('first')
    await hook('second')
    await hook(
      [
        '**Deploy** finished: see <https://ci.example/1|build 1> and [docs](javascript:alert(1)) <img src=x onerror=alert(1)>',
        '- one',
        '- two',
        '```',
        'code <b>not bold</b>',
        '```',
      ].join('\n'),
    )

    const vera = await signIn(n, 'vera', 'vera-password-123')
    t.after(() => vera.close())
    const page = vera.page
    const badge = navButton(page, 'ops').locator('span.count')
    await page.waitForFunction(() => document.querySelector('nav [data-unread-for="ops"]')?.textContent === '3')
    assert.equal(await badge.getAttribute('aria-label'), '3 unread')
    await hook('fourth, live')
    await page.waitForFunction(() => document.querySelector('nav [data-unread-for="ops"]')?.textContent === '4')

    // Markdown: formatting as elements, HTML and unsafe links as text only.
    const md = page.locator('li.card', { hasText: 'Deploy' })
    assert.equal(await md.locator('strong', { hasText: 'Deploy' }).count(), 1)
    assert.equal(
      await md.locator('a[href="https://ci.example/1"]', { hasText: 'build 1' }).getAttribute('rel'),
      'noopener noreferrer',
    )
    assert.equal(await md.locator('a[href^="javascript"]').count(), 0)
    assert.ok(
      (await md.locator('.md').textContent())?.includes('and docs <img'),
      'an unsafe link keeps its label as text',
    )
    assert.equal(
      await md.locator('h2').textContent(),
      'Deploy finished: see build 1 and docs <img src=x onerror=alert(1)>',
    )
    assert.equal(await md.locator('img').count(), 0)
    assert.ok((await md.textContent())?.includes('<img src=x onerror=alert(1)>'))
    assert.equal(await md.locator('.md ul li').count(), 2)
    assert.equal(await md.locator('pre code').textContent(), 'code <b>not bold</b>')
    await page.screenshot({ path: join(OUT, 'unread.png'), fullPage: true })

    await page.getByRole('button', { name: 'Mark all read' }).click()
    await page.waitForFunction(() => document.querySelector('nav [data-unread-for="ops"]')?.textContent === '')

    // A channel admin edits their channel: not its visibility, and only their channels.
    await page.getByRole('button', { name: 'Manage channels' }).click()
    const form = page.getByRole('form', { name: 'Edit ops' })
    await form.waitFor()
    assert.equal(await page.getByRole('form', { name: 'Edit general' }).count(), 0)
    assert.equal(await form.getByLabel('Visibility').isDisabled(), true)
    await form.getByLabel('Display name').fill('Operations')
    await form.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Saved ops.').waitFor()
    await navButton(page, 'Operations').waitFor()
    const added = page.getByRole('form', { name: 'Add a member to ops' })
    await added.getByLabel('Username').fill('otto')
    await added.getByLabel('Role').selectOption('operator')
    await added.getByRole('button', { name: 'Add member' }).click()
    await page.getByLabel('Role of otto in ops').waitFor()
    await page.screenshot({ path: join(OUT, 'channels.png'), fullPage: true })
    await page.setViewportSize({ width: 390, height: 800 })
    await page.screenshot({ path: join(OUT, 'channels-phone.png'), fullPage: true })
    await page.setViewportSize({ width: 1280, height: 860 })
    await page.getByRole('button', { name: 'Remove otto from ops' }).click()
    await confirmAction(page, 'Remove member')
    await page.getByLabel('Role of otto in ops').waitFor({ state: 'detached' })
    const members = await n.client.get('/api/v1/channels/ops/members', { cookie: admin })
    assert.deepEqual(
      members.body.members.map((m: { username: string }) => m.username),
      ['vera'],
    )
    assert.equal(
      (await n.client.get('/api/v1/channels/ops', { cookie: admin })).body.channel.display_name,
      'Operations',
    )
    assert.deepEqual(vera.problems, [])

    // The administrator imports webhooks: preview first (nothing written), then import.
    const adm = await signIn(n, ADMIN, ADMIN_PASSWORD)
    t.after(() => adm.close())
    const hooksBefore = (await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.length
    await adm.page.getByRole('button', { name: 'Administration' }).click()
    const box = adm.page.getByLabel('Webhooks to import (JSON)')
    await box.fill(JSON.stringify({ webhooks: [{ id: 'old-hook-0123456789abcdef', channel: 'nope' }] }))
    await adm.page.getByRole('button', { name: 'Preview' }).click()
    await adm.page.getByRole('alert').filter({ hasText: 'nope' }).waitFor()
    assert.equal(await adm.page.getByRole('button', { name: 'Import', exact: true }).isDisabled(), true)
    await box.fill(
      JSON.stringify({
        webhooks: [
          { id: 'old-hook-0123456789abcdef', channel: 'ops' },
          { id: 'old-hook-fedcba9876543210', channel: 'general', channel_locked: true },
        ],
      }),
    )
    await adm.page.getByRole('button', { name: 'Preview' }).click()
    await adm.page.getByText('Preview (nothing written yet): 2 to create, 0 already present.').waitFor()
    assert.equal(await adm.page.getByText('old-hook-0123456789abcdef').count(), 0, 'ids are shown masked')
    await adm.page.screenshot({ path: join(OUT, 'import.png'), fullPage: true })
    assert.equal((await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.length, hooksBefore)
    await adm.page.getByRole('button', { name: 'Import', exact: true }).click()
    await adm.page.getByText('Imported: 2 created, 0 already present.').waitFor()
    assert.equal((await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.length, hooksBefore + 2)
    // The one refused preview (unknown channel) is the only failed request.
    assert.deepEqual(adm.problems, ['Failed to load resource: the server responded with a status of 400 (Bad Request)'])
  })
}
