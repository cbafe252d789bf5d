/**
 * The web client in Debian's Chromium against a real notify (SQLite and PostgreSQL): sign
 * in, a card arriving live, search, the read filter and Mark read, acknowledge as an
 * operator but not as a viewer, archive and restore, a private channel appearing for a new
 * member only, a webhook URL shown once, New URL and Revoke. Screenshots of the main screens go to apps/notify/test-output/ (gitignored).
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { confirmAction, signIn } from './browser.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, member, publish, reader, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })

const card = (page: Page, text: string) => page.locator('li.card', { hasText: text })

for (const backend of backends) {
  describe(`web client (${backend.name})`, () => {
    test('sign in, live cards, search, read filter, mark read, lifecycle by role, archive and restore', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      await reader(n, admin, 'vera')
      await reader(n, admin, 'otto')
      await member(n, admin, 'ops', 'otto', 'operator')
      const otto = await signIn(n, 'otto', 'otto-password-123')
      t.after(() => otto.close())
      const vera = await signIn(n, 'vera', 'vera-password-123')
      t.after(() => vera.close())
      await otto.page.getByText('Nothing unread.').waitFor()

      // A card arrives live on both screens, rendered from data only.
      const cardRes = await n.client.post('/api/v1/notifications', {
        token: ops.token,
        body: {
          version: 1,
          title: 'Disk full on db-1 <img src=x onerror=alert(1)>',
          summary: 'The /var volume is at 97%.',
          severity: 'error',
          source: 'prometheus',
          metrics: [{ label: 'used', value: '97%' }],
          fields: [{ label: 'host', value: 'db-1' }],
          links: [{ label: 'Runbook', url: 'https://runbooks.example/disk' }],
        },
      })
      assert.equal(cardRes.status, 201)
      await publish(n, ops.token, 'backup finished on db-2')
      for (const s of [otto, vera]) await card(s.page, 'Disk full on db-1').waitFor()
      assert.equal(await otto.page.locator('li.card img').count(), 0, 'payload text is never HTML')
      assert.equal(
        await card(otto.page, 'Disk full').getByRole('link', { name: 'Runbook' }).getAttribute('rel'),
        'noopener noreferrer',
      )
      await otto.page.screenshot({ path: join(OUT, `inbox-laptop-${backend.name}.png`) })

      // Search.
      await otto.page.getByLabel('Search').fill('backup')
      await otto.page.getByLabel('Search').press('Enter')
      await card(otto.page, 'Disk full').waitFor({ state: 'detached' })
      await card(otto.page, 'backup finished').waitFor()
      await otto.page.getByLabel('Search').fill('')
      await otto.page.getByLabel('Search').press('Enter')
      await card(otto.page, 'Disk full').waitFor()

      // A viewer has no Acknowledge button; an operator acknowledges and both see it.
      assert.equal(await card(vera.page, 'Disk full').getByRole('button', { name: 'Acknowledge' }).count(), 0)
      await card(otto.page, 'Disk full').getByRole('button', { name: 'Acknowledge' }).click()
      for (const s of [otto, vera])
        await card(s.page, 'Disk full').locator('.state', { hasText: 'acknowledged' }).waitFor()
      await card(vera.page, 'Disk full').getByRole('button', { name: 'History' }).click()
      await card(vera.page, 'Disk full')
        .getByRole('list', { name: 'Activity history' })
        .getByText('otto acknowledged')
        .waitFor()
      // Keyboard: j selects the first card, r resolves it (operator).
      await otto.page.locator('body').press('j')
      await otto.page.locator('li.card.selected', { hasText: 'backup finished' }).waitFor()
      await otto.page.locator('body').press('r')
      await card(otto.page, 'backup finished').locator('.state', { hasText: 'resolved' }).waitFor()

      // Mark read removes it from Unread only; Read & unread shows it again.
      await card(vera.page, 'backup finished').getByRole('button', { name: 'Mark read' }).click()
      await card(vera.page, 'backup finished').waitFor({ state: 'detached' })
      await vera.page.getByLabel('Read filter').selectOption('all')
      await card(vera.page, 'backup finished').waitFor()
      // Mark all read empties the unread view.
      await vera.page.getByLabel('Read filter').selectOption('unread')
      await vera.page.getByRole('button', { name: 'Mark all read' }).click()
      await vera.page.getByText('Nothing unread.').waitFor()

      // Archive and restore through the Archived filter.
      await card(otto.page, 'Disk full').getByRole('button', { name: 'Archive' }).click()
      await card(otto.page, 'Disk full').waitFor({ state: 'detached' })
      await otto.page.getByLabel('Lifecycle').selectOption('archived')
      await card(otto.page, 'Disk full').getByRole('button', { name: 'Restore' }).click()
      await card(otto.page, 'Disk full').waitFor({ state: 'detached' })
      await otto.page.getByLabel('Lifecycle').selectOption('')
      await card(otto.page, 'Disk full').waitFor()
      assert.deepEqual([...otto.problems, ...vera.problems], [])
    })

    test('a private channel appears for a new member only; phone layout', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, admin, 'lobby')
      await reader(n, admin, 'mia')
      await reader(n, admin, 'nils')
      const mia = await signIn(n, 'mia', 'mia-password-123', { phone: true })
      t.after(() => mia.close())
      const nils = await signIn(n, 'nils', 'nils-password-123')
      t.after(() => nils.close())
      const priv = await channel(n, admin, 'war-room', 'private')
      await member(n, admin, 'war-room', 'mia', 'viewer')
      await mia.page.getByRole('button', { name: /war-room/ }).waitFor()
      await publish(n, priv.token, 'inside the war room')
      await card(mia.page, 'inside the war room').waitFor()
      // On the phone's channel strip an unread count stands apart from its channel's name.
      const all = mia.page.getByRole('button', { name: /All channels/ })
      await all.locator('span.count', { hasText: '1' }).waitFor()
      const gap = await all.evaluate((button) => {
        const range = document.createRange()
        range.selectNodeContents(button.firstChild as Node)
        const count = button.querySelector('span.count') as HTMLElement
        return count.getBoundingClientRect().left - range.getBoundingClientRect().right
      })
      assert.ok(gap >= 4, `the count touches the channel name (${gap}px apart)`)
      await mia.page.screenshot({ path: join(OUT, `inbox-phone-${backend.name}.png`) })
      // nils is not a member: a later public item arrives, the private one and channel never do.
      await publish(n, priv.token, 'still private')
      const { token } = (await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'lobby' } })).body
        .webhook
      await publish(n, token, 'public news')
      await card(nils.page, 'public news').waitFor()
      assert.equal(await nils.page.getByRole('button', { name: /war-room/ }).count(), 0)
      assert.equal(await card(nils.page, 'war room').count(), 0)
      assert.equal(await card(nils.page, 'still private').count(), 0)
      assert.deepEqual([...mia.problems, ...nils.problems], [])
    })

    test('a stream refused by a proxy opens again; a session that expires or is gone while the inbox is open returns the page to sign-in', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      await reader(n, admin, 'sam')
      // The 502 is the test's own (below): an expected console error.
      const sam = await signIn(n, 'sam', 'sam-password-123', {}, [401, 502])
      t.after(() => sam.close())
      await publish(n, ops.token, 'before the session ends')
      await card(sam.page, 'before the session ends').waitFor()
      // A stream refused with anything but 401 (a proxy's 502 while notify restarts) opens again.
      await sam.page.route('**/api/v1/stream', (route) => route.fulfill({ status: 502, body: 'Bad Gateway' }), {
        times: 1,
      })
      await sam.page.reload()
      await publish(n, ops.token, 'after a refused stream')
      await card(sam.page, 'after a refused stream').waitFor()
      const { id } = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'sam')
        .executeTakeFirstOrThrow()
      // Its fixed end too: the page's calls would otherwise renew it (auth/sessions.ts).
      const soon = new Date(Date.now() + 3000).toISOString()
      await n.database.db
        .updateTable('sessions')
        .set({ expires_at: soon, renew_until: soon })
        .where('user_id', '=', id)
        .execute()
      // A stream learns its session's expiry as it opens: reload the page to open it again.
      await sam.page.reload()
      await card(sam.page, 'before the session ends').waitFor()
      // The server ends the stream at the session's expiry; the reconnection's 401 shows sign-in.
      await sam.page.getByText('Your session has ended. Sign in again.').waitFor()
      await sam.page.screenshot({ path: join(OUT, `session-ended-${backend.name}.png`) })
      await sam.page.getByLabel('Username').fill('sam')
      await sam.page.getByLabel('Password').fill('sam-password-123')
      await sam.page.getByRole('button', { name: 'Sign in' }).click()
      await card(sam.page, 'before the session ends').waitFor()
      await publish(n, ops.token, 'after signing in again')
      await card(sam.page, 'after signing in again').waitFor()
      // The card's arrival refreshes the unread badges 150 ms later (web/unread.js): let that
      // call answer first (three unread), or its 401 rather than the click's ends the session.
      await sam.page.locator('[data-unread-all]').filter({ hasText: /^3$/ }).first().waitFor()
      // A session gone behind the stream's back (removed from the database, no stream change):
      // the next call's 401 brings the sign-in form too, not an error beside a stale inbox.
      await n.database.db.deleteFrom('sessions').where('user_id', '=', id).execute()
      await card(sam.page, 'after signing in again').getByRole('button', { name: 'Mark read' }).click()
      await sam.page.getByText('Your session has ended. Sign in again.').waitFor()
      assert.deepEqual(sam.problems, [])
    })
  })
}

for (const backend of backends) {
  test(`administration (${backend.name}): a private channel for one member, a webhook URL shown once`, async (t) => {
    const n = await startNotify(backend)
    t.after(() => n.close())
    const adminCookie = await n.client.login(ADMIN, ADMIN_PASSWORD)
    await reader(n, adminCookie, 'mia')
    await reader(n, adminCookie, 'nils')
    const admin = await signIn(n, ADMIN, ADMIN_PASSWORD)
    t.after(() => admin.close())
    const mia = await signIn(n, 'mia', 'mia-password-123')
    t.after(() => mia.close())
    const nils = await signIn(n, 'nils', 'nils-password-123')
    t.after(() => nils.close())
    const page = admin.page
    await page.getByRole('button', { name: 'Administration' }).click()
    await page.getByLabel('URL name (cannot change later)').fill('night-shift')
    await page.getByLabel('Display name').fill('Night shift')
    await page.getByLabel('Visibility').selectOption('private')
    await page.getByRole('button', { name: 'Create channel' }).click()
    const channelUrl = await page.getByLabel('Publishing URL').inputValue()
    assert.match(channelUrl, new RegExp(`^${n.base}/hooks/[A-Za-z0-9_-]{43}$`))

    // A webhook for the new channel: its URL is shown once, with a copy button, and works.
    const hookForm = page.locator('form', { hasText: 'New webhook' })
    await hookForm.locator('select[name=channel]').selectOption('night-shift')
    await hookForm.getByRole('button', { name: 'Create webhook' }).click()
    const hookUrl = await page.getByLabel('Webhook URL').inputValue()
    assert.match(hookUrl, /\/hooks\//)
    assert.equal(await page.getByRole('button', { name: 'Copy' }).count(), 1)
    await page.locator('table.hooks').getByText('night-shift').first().waitFor()
    await page.screenshot({ path: join(OUT, `admin-laptop-${backend.name}.png`) })
    await page.getByRole('button', { name: 'All channels' }).click()
    await page.getByLabel('Search').waitFor()
    await page.getByRole('button', { name: 'Administration' }).click()
    await page.locator('table.hooks').waitFor()
    assert.equal(await page.getByLabel('Webhook URL').count(), 0, 'the URL is not shown again')
    assert.equal((await page.content()).includes(new URL(hookUrl).pathname), false)

    // Membership: mia sees the private channel appear; nils never does.
    const memberForm = page.locator('form', { hasText: 'Channel member' })
    await memberForm.locator('select[name=channel]').selectOption('night-shift')
    await memberForm.getByLabel('Username').fill('mia')
    await memberForm.getByRole('button', { name: 'Set role' }).click()
    await page.getByText('mia is viewer of night-shift').waitFor()
    await mia.page.getByRole('button', { name: /Night shift/ }).waitFor()
    const res = await fetch(hookUrl, { method: 'POST', body: JSON.stringify({ text: 'night shift handover' }) })
    assert.equal(res.status, 200)
    await card(mia.page, 'night shift handover').waitFor()
    const pub = await n.client.post('/api/v1/webhooks', { cookie: adminCookie, body: { channel: 'general' } })
    await publish(n, pub.body.webhook.token, 'general news')
    await card(nils.page, 'general news').waitFor()
    assert.equal(await nils.page.getByRole('button', { name: /Night shift/ }).count(), 0)
    assert.equal(await card(nils.page, 'night shift handover').count(), 0)

    // New URL: another active URL for the same channel, shown once; Revoke stops each at once.
    const nightRows = page.locator('table.hooks tbody tr', { hasText: 'night-shift' })
    const activeRows = nightRows.filter({ hasText: 'active' })
    const before = await activeRows.count()
    await activeRows.first().getByRole('button', { name: 'New URL' }).click()
    const second = await page.getByLabel('Webhook URL').inputValue()
    assert.notEqual(second, hookUrl)
    const activeNight = (n: number) =>
      page.waitForFunction(
        (n) =>
          [...document.querySelectorAll('table.hooks tbody tr')].filter(
            (r) => r.textContent?.includes('night-shift') && r.textContent.includes('active'),
          ).length === n,
        n,
      )
    await activeNight(before + 1)
    const post = (url: string) => fetch(url, { method: 'POST', body: JSON.stringify({ text: 'via the new URL' }) })
    assert.equal((await post(second)).status, 200)
    await card(mia.page, 'via the new URL').waitFor()
    while ((await activeRows.count()) > 0) {
      const left = await activeRows.count()
      await activeRows.first().getByRole('button', { name: 'Revoke' }).click()
      await confirmAction(page, 'Revoke webhook')
      await activeNight(left - 1)
    }
    for (const url of [hookUrl, second]) assert.equal((await post(url)).status, 401, 'a revoked URL stops at once')
    // The refused deliveries are the test's own fetches, not the page's.
    assert.deepEqual([...admin.problems, ...mia.problems, ...nils.problems], [])
  })
}
