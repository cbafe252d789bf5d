/**
 * The web client by keyboard alone, in Debian's Chromium against a real notify (SQLite and
 * PostgreSQL): focus stays on the control a reader is on while the view is redrawn (a live
 * card, a card marked read, a panel reloaded after a change); the confirmations (Revoke a
 * webhook, Remove a member) cancel with focus back on their button and, confirmed, leave
 * focus in the list; the user panel's tabs follow the arrow keys. Dark mode at laptop
 * (1280x800) and phone (390x844): text on the accent colour stays readable. Screenshots go to
 * apps/notify/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { sharedBrowser } from './browser.ts'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  member,
  type Notify,
  publish,
  reader,
  startNotify,
} from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })

const LAPTOP = { viewport: { width: 1280, height: 800 } }
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true }

interface Signed {
  page: Page
  problems: string[]
  /** What the next confirm() gets: true accepts, false dismisses (the reader's Escape). */
  answer: boolean[]
}

/** A page signed in by keyboard; confirmations are answered from `answer`, and counted. */
async function signInByKeyboard(
  t: { after(fn: () => Promise<void>): void },
  n: Notify,
  username: string,
  password: string,
  options: object = LAPTOP,
): Promise<Signed> {
  const context = await (await sharedBrowser()).newContext(options)
  t.after(() => context.close())
  const page = await context.newPage()
  const s: Signed = { page, problems: [], answer: [] }
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) s.problems.push(m.text())
  })
  page.on('pageerror', (e) => s.problems.push(String(e)))
  page.on('dialog', (d) => {
    const yes = s.answer.shift()
    if (yes === undefined) s.problems.push(`unexpected dialog: ${d.message()}`)
    void (yes ? d.accept() : d.dismiss())
  })
  await page.goto(n.base)
  // The form focuses the user name; the rest is typing and Tab.
  await page.getByLabel('Username').waitFor()
  await page.keyboard.type(username)
  await page.keyboard.press('Tab')
  await page.keyboard.type(password)
  await page.keyboard.press('Enter')
  await page.getByText(`Signed in as ${username}`).waitFor()
  return s
}

/** The focused element: its text or label, and the card or row it is in. */
function focused(page: Page) {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null
    const holder = el?.closest('[data-id],[data-key],[data-user]') as HTMLElement | null
    return {
      name: el?.getAttribute('aria-label') ?? el?.textContent?.trim() ?? '',
      tag: el?.tagName ?? '',
      in: holder?.dataset.id ?? holder?.dataset.key ?? holder?.dataset.user ?? '',
    }
  })
}

/** Waits until focus is where `want` says (focus moves after the view is redrawn). */
async function focusIs(page: Page, want: { name?: string | RegExp; in?: string }) {
  await page.waitForFunction(
    ([name, isRegExp, holder]) => {
      const el = document.activeElement as HTMLElement | null
      if (!el || el === document.body) return false
      const text = el.getAttribute('aria-label') ?? el.textContent?.trim() ?? ''
      const h = el.closest('[data-id],[data-key],[data-user]') as HTMLElement | null
      const at = h?.dataset.id ?? h?.dataset.key ?? h?.dataset.user ?? ''
      const nameOk = name === null || (isRegExp ? new RegExp(name).test(text) : text === name)
      return nameOk && (holder === null || at === holder)
    },
    [
      want.name instanceof RegExp ? want.name.source : (want.name ?? null),
      want.name instanceof RegExp,
      want.in ?? null,
    ] as const,
  )
}

/** How much wider than the screen the page is (0 or less: it fits). */
function overflow(page: Page) {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
}

/** WCAG contrast ratio of an element's text on its own background. */
function contrast(page: Page, selector: string) {
  return page
    .locator(selector)
    .first()
    .evaluate((el) => {
      const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number)
      const lum = (c: string) => {
        const [r, g, b] = rgb(c).map((v) => {
          const s = v / 255
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
        })
        return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
      }
      const style = getComputedStyle(el)
      const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x)
      return (a! + 0.05) / (b! + 0.05)
    })
}

for (const backend of backends) {
  describe(`web client by keyboard (${backend.name})`, () => {
    test('focus survives live cards and actions; confirmations cancel back to their button; tabs follow the arrows', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      await reader(n, admin, 'otto')
      await reader(n, admin, 'vera')
      await member(n, admin, 'ops', 'otto', 'operator')
      await member(n, admin, 'ops', 'vera', 'viewer')
      const first = await publish(n, ops.token, 'first message')
      const second = await publish(n, ops.token, 'second message')
      const s = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD)
      const { page } = s
      await page.locator(`li.card[data-id="${first}"]`).waitFor()

      // On a card's button, a live card redraws the list: focus stays on that button.
      await page.locator(`li.card[data-id="${first}"]`).getByRole('button', { name: 'Archive' }).focus()
      const third = await publish(n, ops.token, 'third message')
      await page.locator(`li.card[data-id="${third}"]`).waitFor()
      assert.deepEqual(await focused(page), { name: 'Archive', tag: 'BUTTON', in: String(first) })
      // On a channel in the navigation, too (its unread count changes with the card).
      await page.locator('nav [data-key="channel:ops"]').focus()
      const fourth = await publish(n, ops.token, 'fourth message')
      await page.locator(`li.card[data-id="${fourth}"]`).waitFor()
      assert.equal((await focused(page)).in, 'channel:ops')
      // Mark read by keyboard: the card leaves the unread view, focus goes to the next card's
      // Mark read (the list is newest first), not back to the top of the page.
      await page.locator(`li.card[data-id="${third}"]`).getByRole('button', { name: 'Mark read' }).focus()
      await page.keyboard.press('Enter')
      await page.locator(`li.card[data-id="${third}"]`).waitFor({ state: 'detached' })
      await focusIs(page, { name: 'Mark read', in: String(second) })
      // Keyboard shortcuts still work from there.
      await page.keyboard.press('Tab')
      await focusIs(page, { name: 'Acknowledge', in: String(second) })
      await page.keyboard.press('Enter')
      await page.locator(`li.card[data-id="${second}"] .state`, { hasText: 'acknowledged' }).waitFor()
      await focusIs(page, { in: String(second) })

      // Administration: Revoke asks first. Escape (dismiss) keeps focus on Revoke and the hook.
      await page.getByRole('button', { name: 'Administration' }).focus()
      await page.keyboard.press('Enter')
      const row = page.locator(`table.hooks tr[data-key="hook:${ops.webhookId}"]`)
      await row.waitFor()
      await row.getByRole('button', { name: 'Revoke' }).focus()
      s.answer.push(false)
      await page.keyboard.press('Enter')
      assert.deepEqual(await focused(page), { name: 'Revoke', tag: 'BUTTON', in: `hook:${ops.webhookId}` })
      assert.equal(
        (await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.filter(
          (w: { active: boolean }) => !w.active,
        ).length,
        0,
      )
      // Confirmed: the hook is revoked, its row keeps no button, focus goes to the next
      // webhook's Revoke rather than to the top of the page.
      s.answer.push(true)
      await page.keyboard.press('Enter')
      await row.getByText('revoked').waitFor()
      await focusIs(page, { name: 'Revoke' })
      assert.notEqual((await focused(page)).in, `hook:${ops.webhookId}`)
      assert.equal(s.answer.length, 0, 'each confirmation was asked')

      // Manage channels: Remove a member asks first; Escape keeps focus, confirmed moves it on.
      await page.getByRole('button', { name: 'Manage channels' }).focus()
      await page.keyboard.press('Enter')
      const remove = page.getByRole('button', { name: 'Remove vera from ops' })
      await remove.focus()
      s.answer.push(false)
      await page.keyboard.press('Enter')
      assert.deepEqual(await focused(page), { name: 'Remove vera from ops', tag: 'BUTTON', in: 'member:ops/vera' })
      s.answer.push(true)
      await page.keyboard.press('Enter')
      await remove.waitFor({ state: 'detached' })
      await focusIs(page, { in: 'member:ops/otto' })

      // Users: the tabs are one Tab stop, arrows move between them, focus follows.
      await page.getByRole('button', { name: 'Users', exact: true }).focus()
      await page.keyboard.press('Enter')
      const tab = (name: string) => page.getByRole('tab', { name })
      await page.locator('tr[data-user="otto"]').waitFor()
      await tab('Users').focus()
      assert.equal(await tab('Audit log').getAttribute('tabindex'), '-1')
      await page.keyboard.press('ArrowRight')
      await focusIs(page, { name: 'Audit log' })
      await page.getByRole('list', { name: 'Audit log' }).waitFor()
      assert.equal(await tab('Audit log').getAttribute('aria-selected'), 'true')
      assert.equal(await page.getByRole('tabpanel').getAttribute('aria-labelledby'), 'tab-audit')
      await page.keyboard.press('End')
      await focusIs(page, { name: 'Action targets' })
      await page.keyboard.press('ArrowRight')
      await focusIs(page, { name: 'Users' })
      // A change in the panel reloads it: focus stays in the user's row.
      await page.locator('tr[data-user="otto"]').getByRole('button', { name: 'Make administrator' }).focus()
      await page.keyboard.press('Enter')
      await page.locator('tr[data-user="otto"]').getByRole('button', { name: 'Remove administrator' }).waitFor()
      await focusIs(page, { name: 'Remove administrator', in: 'otto' })
      assert.deepEqual(s.problems, [])
    })
  })
}

test('dark mode at laptop and phone: text on the accent colour is readable, no view wider than the screen', async (t) => {
  const n = await startNotify(backends[0]!)
  t.after(() => n.close())
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  await publish(n, ops.token, 'disk almost full on db-1')
  for (const [name, size] of [
    ['laptop', LAPTOP],
    ['phone', PHONE],
  ] as const) {
    const options = { ...size, colorScheme: 'dark' as const }
    const context = await (await sharedBrowser()).newContext(options)
    t.after(() => context.close())
    const page = await context.newPage()
    await page.goto(n.base)
    const signInButton = page.getByRole('button', { name: 'Sign in' })
    await signInButton.waitFor()
    assert.ok((await contrast(page, 'button.primary')) >= 4.5, `${name}: Sign in button contrast`)
    await page.screenshot({ path: join(OUT, `dark-signin-${name}.png`) })
    const s = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD, options)
    await s.page.getByRole('heading', { name: 'disk almost full on db-1' }).waitFor()
    assert.ok((await contrast(s.page, 'nav span.count:not(:empty)')) >= 4.5, `${name}: unread count contrast`)
    await s.page.screenshot({ path: join(OUT, `dark-inbox-${name}.png`), fullPage: true })
    assert.ok((await overflow(s.page)) <= 0, `${name}: the inbox view is wider than the screen`)
    await s.page.getByRole('button', { name: 'Administration' }).click()
    await s.page.locator('table.hooks').waitFor()
    assert.ok((await contrast(s.page, 'button.primary')) >= 4.5, `${name}: Create channel button contrast`)
    await s.page.screenshot({ path: join(OUT, `dark-admin-${name}.png`), fullPage: true })
    assert.ok((await overflow(s.page)) <= 0, `${name}: the admin view is wider than the screen`)
    await s.page.getByRole('button', { name: 'Users', exact: true }).click()
    await s.page.locator('table.users').waitFor()
    await s.page.screenshot({ path: join(OUT, `dark-users-${name}.png`), fullPage: true })
    assert.ok((await overflow(s.page)) <= 0, `${name}: the users view is wider than the screen`)
    for (const view of ['Manage channels', 'Push notifications']) {
      await s.page.getByRole('button', { name: view }).click()
      await s.page.getByRole('heading', { name: view, level: 2 }).waitFor()
      await s.page.screenshot({
        path: join(OUT, `dark-${view.split(' ')[0]!.toLowerCase()}-${name}.png`),
        fullPage: true,
      })
      assert.ok((await overflow(s.page)) <= 0, `${name}: ${view} is wider than the screen`)
    }
    assert.deepEqual(s.problems, [])
  }
})
