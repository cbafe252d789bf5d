/**
 * The inbox's remaining reader paths in Debian's Chromium against a real notify (SQLite and
 * PostgreSQL): the severity and lifecycle filters combined with search, cursor paging with
 * Load more, every keyboard shortcut (j/k, a, r, e, /) and Mark channel read (the third way
 * of marking read, besides Mark read and Mark all read in web.test.ts), which leaves other
 * channels unread.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { signIn } from './browser.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, member, publish, reader, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })
const card = (page: Page, text: string) => page.locator('li.card', { hasText: text })
const cards = (page: Page) => page.locator('li.card')
/** Wait for `n` cards; on a timeout say what the page shows instead. */
const requested = new WeakMap<Page, string[]>()
async function cardCount(page: Page, n: number) {
  try {
    await page.waitForFunction((n) => document.querySelectorAll('li.card').length === n, n, { timeout: 15_000 })
  } catch (err) {
    const shown = await page.evaluate(() => ({
      cards: document.querySelectorAll('li.card').length,
      titles: [...document.querySelectorAll('li.card h2')].slice(0, 60).map((e) => e.textContent),
      readFilter: (document.querySelector('[aria-label="Read filter"]') as HTMLSelectElement | null)?.value,
      search: (document.querySelector('[aria-label="Search"]') as HTMLInputElement | null)?.value,
    }))
    const loads = (requested.get(page) ?? []).slice(-8)
    throw new Error(`expected ${n} cards; the page shows ${JSON.stringify(shown)} after ${JSON.stringify(loads)}`, {
      cause: err,
    })
  }
}

for (const backend of backends) {
  test(`filters with search, Load more, keyboard shortcuts, Mark channel read (${backend.name})`, async (t) => {
    const n = await startNotify(backend)
    t.after(() => n.close())
    const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    const ops = await channel(n, admin, 'ops')
    const dev = await channel(n, admin, 'dev')
    await reader(n, admin, 'otto')
    await member(n, admin, 'ops', 'otto', 'operator')
    const post = async (title: string, severity: string) => {
      const res = await n.client.post('/api/v1/notifications', {
        token: ops.token,
        body: { version: 1, title, severity },
      })
      assert.equal(res.status, 201, res.text)
    }
    // 55 routine items, older than the three the filters look for: more than one page (50).
    for (let i = 0; i < 55; i++) await publish(n, ops.token, `routine item ${i}`)
    await post('disk full on db-1', 'error')
    await post('disk almost full on db-2', 'warning')
    await post('cpu hot on web-1', 'error')
    await publish(n, dev.token, 'dev build green')

    const otto = await signIn(n, 'otto', 'otto-password-123')
    t.after(() => otto.close())
    const { page } = otto
    const urls: string[] = []
    requested.set(page, urls)
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/notifications?'))
        urls.push(`${performance.now().toFixed(0)} ${new URL(r.url()).search}`)
    })
    page.on('response', (r) => {
      if (r.url().includes('/api/v1/notifications?'))
        urls.push(`${performance.now().toFixed(0)} done ${new URL(r.url()).search}`)
    })
    await card(page, 'cpu hot').waitFor()

    // Search and severity combine; the lifecycle filter narrows further.
    await page.getByLabel('Search').fill('disk')
    await page.getByLabel('Search').press('Enter')
    await card(page, 'cpu hot').waitFor({ state: 'detached' })
    await page.getByLabel('Severity').selectOption('error')
    await card(page, 'disk almost full').waitFor({ state: 'detached' })
    assert.deepEqual(await cards(page).locator('h2').allTextContents(), ['disk full on db-1'])
    await page.getByLabel('Lifecycle').selectOption('resolved')
    await page.getByText(/Nothing/).waitFor()
    await page.getByLabel('Lifecycle').selectOption('')
    await page.getByLabel('Severity').selectOption('')
    await page.getByLabel('Search').fill('')
    await page.getByLabel('Search').press('Enter')

    // Paging: the first page holds 50, Load more brings the rest. The unread list shown
    // until now also holds 50: wait for the list of all to arrive, not for a count.
    const all = page.waitForResponse(
      (r) => r.url().includes('/api/v1/notifications?') && !new URL(r.url()).searchParams.has('unread'),
    )
    await page.getByLabel('Read filter').selectOption('all')
    await all
    await cardCount(page, 50)
    await page.getByRole('button', { name: 'Load more' }).click()
    await cardCount(page, 59)
    assert.equal(await page.getByRole('button', { name: 'Load more' }).count(), 0)
    await card(page, 'routine item 0').waitFor()

    // Keyboard: / focuses search; j and k move; a acknowledges, r resolves, e archives.
    await page.locator('body').press('/')
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Search')
    await page.getByLabel('Search').press('Escape')
    await page.locator('body').click({ position: { x: 5, y: 700 } })
    await page.locator('body').press('j')
    await page.locator('body').press('j')
    await page.locator('li.card.selected', { hasText: 'cpu hot' }).waitFor()
    await page.locator('body').press('k')
    await page.locator('li.card.selected', { hasText: 'dev build green' }).waitFor()
    await page.locator('body').press('j')
    await page.locator('body').press('a')
    await card(page, 'cpu hot').locator('.state', { hasText: 'acknowledged' }).waitFor()
    await page.locator('body').press('r')
    await card(page, 'cpu hot').locator('.state', { hasText: 'resolved' }).waitFor()
    await page.locator('body').press('e')
    await card(page, 'cpu hot').waitFor({ state: 'detached' })
    const archived = await n.client.get('/api/v1/notifications?state=archived', { cookie: admin })
    assert.deepEqual(archived.body.notifications, [], 'archive is per reader: not the administrator’s')

    // Mark channel read: ops becomes read, dev stays unread.
    await page.getByRole('button', { name: /^ops/ }).click()
    await page.getByRole('button', { name: 'Mark channel read' }).click()
    await page.getByText('Nothing unread.').waitFor()
    await page.waitForFunction(() => document.querySelector('nav [data-unread-for="ops"]')?.textContent === '')
    assert.equal(await page.locator('nav [data-unread-for="dev"]').textContent(), '1')
    await page.screenshot({ path: join(OUT, `inbox-channel-read-${backend.name}.png`) })

    // Typing in the search box survives a render (here a live card) before Enter: the box is
    // rebuilt on every render, and it used to come back with the last search, not the typing.
    await page.getByLabel('Search').fill('disk')
    await publish(n, ops.token, 'arrives while typing')
    await card(page, 'arrives while typing').waitFor()
    assert.equal(await page.getByLabel('Search').inputValue(), 'disk')
    await page.getByLabel('Search').press('Enter')
    await card(page, 'arrives while typing').waitFor({ state: 'detached' })
    await page.getByText('Nothing unread.').waitFor()
    assert.deepEqual(otto.problems, [])
  })
}
