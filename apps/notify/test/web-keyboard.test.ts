/**
 * The web client by keyboard alone, in Debian's Chromium against a real notify (SQLite and
 * PostgreSQL): focus stays on the control a reader is on while the view is redrawn (a live
 * card, a card marked read, a panel reloaded after a change); the confirmations (Revoke a
 * webhook, Remove a member, Remove administrator, Disable, Revoke sessions) ask in the client's
 * dialog (web/confirm.js) with focus on Cancel, cancel (Escape, or Enter on Cancel) with focus
 * back on their button and, confirmed (Tab, Enter), leave focus in the list; a question open when
 * the session ends goes with the page, the sign-in form taking the keyboard; the user panel's
 * tabs follow the arrow keys. Light and dark at laptop (1280x800) and phone (390x844): no text on
 * any screen under WCAG AA contrast (testkit's unreadableText: the accent colour too); the
 * confirmation dialog in light and dark at both sizes (screenshots `confirm-*.png`). Screenshots
 * go to apps/notify/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { type Page, unreadableText } from '@gatehouse/testkit'
import { confirmAction, sharedBrowser } from './browser.ts'
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
}

/** A page signed in by keyboard; a browser dialog (confirm(), alert()) is a problem. */
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
  const s: Signed = { page, problems: [] }
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) s.problems.push(m.text())
  })
  page.on('pageerror', (e) => s.problems.push(String(e)))
  page.on('dialog', (d) => {
    s.problems.push(`browser dialog: ${d.message()}`)
    void d.dismiss()
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

/** A dialog's accessible description: the text its aria-describedby names. */
function description(dialog: ReturnType<Page['getByRole']>) {
  return dialog.evaluate(
    (d) => document.getElementById(d.getAttribute('aria-describedby') ?? '')?.textContent?.trim() ?? '',
  )
}

/** How much wider than the screen the page is (0 or less: it fits). */
function overflow(page: Page) {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
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

      // Administration: Revoke asks first, in the client's dialog, focus on its Cancel.
      await page.getByRole('button', { name: 'Administration' }).focus()
      await page.keyboard.press('Enter')
      const row = page.locator(`table.hooks tr[data-key="hook:${ops.webhookId}"]`)
      await row.waitFor()
      await row.getByRole('button', { name: 'Revoke' }).focus()
      await page.keyboard.press('Enter')
      const revokeQuestion = page.getByRole('alertdialog', { name: 'Revoke this ops webhook?' })
      await revokeQuestion.waitFor()
      // Opened by keyboard: Cancel shows its focus ring.
      if (backend.name === 'sqlite') await page.screenshot({ path: join(OUT, 'confirm-keyboard-laptop.png') })
      assert.deepEqual(await focused(page), { name: 'Cancel', tag: 'BUTTON', in: '' })
      assert.equal(await page.evaluate(() => document.activeElement?.closest('dialog')?.open), true)
      assert.match(await description(revokeQuestion), /refused at once/)
      // The page behind it is out of reach: Tab goes from Cancel to the action.
      await page.keyboard.press('Tab')
      assert.deepEqual(await focused(page), { name: 'Revoke webhook', tag: 'BUTTON', in: '' })
      // Escape cancels: focus back on Revoke in the hook's row, nothing revoked.
      await page.keyboard.press('Escape')
      await revokeQuestion.waitFor({ state: 'detached' })
      assert.deepEqual(await focused(page), { name: 'Revoke', tag: 'BUTTON', in: `hook:${ops.webhookId}` })
      const revoked = async () =>
        (await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.filter(
          (w: { active: boolean }) => !w.active,
        ).length
      assert.equal(await revoked(), 0)
      // Confirmed (Tab to the action, Enter): the hook is revoked, its row keeps no button,
      // focus goes to the next webhook's Revoke rather than to the top of the page.
      await page.keyboard.press('Enter')
      await revokeQuestion.waitFor()
      await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await row.getByText('revoked').waitFor()
      await focusIs(page, { name: 'Revoke' })
      assert.notEqual((await focused(page)).in, `hook:${ops.webhookId}`)
      assert.equal(await revoked(), 1)

      // Manage channels: Remove a member asks first; Enter on Cancel (where focus starts)
      // cancels with focus back on Remove, confirmed moves it on to the next member.
      await page.getByRole('button', { name: 'Manage channels' }).focus()
      await page.keyboard.press('Enter')
      const remove = page.getByRole('button', { name: 'Remove vera from ops' })
      await remove.focus()
      await page.keyboard.press('Enter')
      const removeQuestion = page.getByRole('alertdialog', { name: 'Remove vera from ops?' })
      await removeQuestion.waitFor()
      assert.match(await description(removeQuestion), /^vera loses the viewer role in ops; the channel is public/)
      await page.keyboard.press('Enter')
      await removeQuestion.waitFor({ state: 'detached' })
      assert.deepEqual(await focused(page), { name: 'Remove vera from ops', tag: 'BUTTON', in: 'member:ops/vera' })
      await page.keyboard.press('Enter')
      await removeQuestion.waitFor()
      await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await remove.waitFor({ state: 'detached' })
      await focusIs(page, { in: 'member:ops/otto' })
      assert.deepEqual(
        (await n.client.get('/api/v1/channels/ops/members', { cookie: admin })).body.members.map(
          (m: { username: string }) => m.username,
        ),
        ['otto'],
      )

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
      // Remove administrator asks first, focus on Cancel; Escape cancels back to the button.
      const isAdmin = async () =>
        (await n.client.get('/api/v1/users', { cookie: admin })).body.users.find(
          (u: { username: string }) => u.username === 'otto',
        ).admin
      await page.keyboard.press('Enter')
      const demote = page.getByRole('alertdialog', { name: 'Remove otto as administrator?' })
      await demote.waitFor()
      assert.deepEqual(await focused(page), { name: 'Cancel', tag: 'BUTTON', in: '' })
      assert.match(await description(demote), /^otto no longer manages users/)
      await page.keyboard.press('Escape')
      await demote.waitFor({ state: 'detached' })
      assert.deepEqual(await focused(page), { name: 'Remove administrator', tag: 'BUTTON', in: 'otto' })
      assert.equal(await isAdmin(), true, 'a cancelled question demotes nobody')
      // Confirmed (Tab, Enter): otto is a reader again, focus stays in his row.
      await page.keyboard.press('Enter')
      await demote.waitFor()
      await page.keyboard.press('Tab')
      assert.deepEqual(await focused(page), { name: 'Remove administrator', tag: 'BUTTON', in: '' })
      await page.keyboard.press('Enter')
      await page.locator('tr[data-user="otto"]').getByRole('button', { name: 'Make administrator' }).waitFor()
      await focusIs(page, { in: 'otto' })
      assert.equal(await isAdmin(), false)
      // Disable and Revoke sessions ask too: Escape from each leaves otto as he was.
      for (const [button, question] of [
        ['Disable', 'Disable otto?'],
        ['Revoke sessions', 'End every session of otto?'],
      ] as const) {
        await page.locator('tr[data-user="otto"]').getByRole('button', { name: button, exact: true }).focus()
        await page.keyboard.press('Enter')
        const q = page.getByRole('alertdialog', { name: question })
        await q.waitFor()
        assert.deepEqual(await focused(page), { name: 'Cancel', tag: 'BUTTON', in: '' })
        await page.keyboard.press('Escape')
        await q.waitFor({ state: 'detached' })
        assert.deepEqual(await focused(page), { name: button, tag: 'BUTTON', in: 'otto' })
      }
      const ottoNow = (await n.client.get('/api/v1/users', { cookie: admin })).body.users.find(
        (u: { username: string }) => u.username === 'otto',
      )
      assert.deepEqual([ottoNow.enabled, ottoNow.sessions], [true, 1])
      assert.deepEqual(s.problems, [])
    })
  })
}

test('a question open when the session ends closes with it: the sign-in form takes the keyboard at once', async (t) => {
  const n = await startNotify(backends[0]!)
  t.after(() => n.close())
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  await reader(n, admin, 'otto')
  const { page, problems } = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD)
  await page.getByRole('button', { name: 'Users', exact: true }).click()
  await page.locator('tr[data-user="otto"]').getByRole('button', { name: 'Revoke sessions' }).focus()
  await page.keyboard.press('Enter')
  const question = page.getByRole('alertdialog', { name: 'End every session of otto?' })
  await question.waitFor()
  // Elsewhere, every session of the administrator ends (this page's too): its stream is refused.
  assert.equal((await n.client.post(`/api/v1/users/${ADMIN}/revoke-sessions`, { cookie: admin })).status, 200)
  await page.getByText('Your session has ended. Sign in again.').waitFor()
  // The question went with the page it was asked on: no modal over the form, which has focus.
  await question.waitFor({ state: 'detached' })
  assert.equal(await page.locator('dialog').count(), 0)
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'username')
  await page.screenshot({ path: join(OUT, 'session-ended-question.png') })
  await page.keyboard.type(ADMIN)
  await page.keyboard.press('Tab')
  await page.keyboard.type(ADMIN_PASSWORD)
  await page.keyboard.press('Enter')
  await page.getByText(`Signed in as ${ADMIN}`).waitFor()
  // The question was not answered: otto's session is still in force.
  const again = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const otto = (await n.client.get('/api/v1/users', { cookie: again })).body.users.find(
    (u: { username: string }) => u.username === 'otto',
  )
  assert.equal(otto.sessions, 1)
  assert.deepEqual(problems, [])
})

test('light and dark at laptop and phone: no text on any screen too faint to read (the accent colour, the unread counts), no view wider than the screen', async (t) => {
  const n = await startNotify(backends[0]!)
  t.after(() => n.close())
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  // A card of each severity (their badges' small text), one acknowledged (its state badge).
  for (const severity of ['critical', 'error', 'warning', 'success']) {
    const res = await n.client.post('/api/v1/notifications', {
      token: ops.token,
      body: { version: 1, title: `${severity} on db-1`, severity, source: 'nagios' },
    })
    assert.equal(res.status, 201, res.text)
  }
  const acked = await publish(n, ops.token, 'backup finished late')
  assert.equal((await n.client.post(`/api/v1/notifications/${acked}/acknowledge`, { cookie: admin })).status, 200)
  await publish(n, ops.token, 'disk almost full on db-1')
  for (const colorScheme of ['light', 'dark'] as const) {
    for (const [name, size] of [
      ['laptop', LAPTOP],
      ['phone', PHONE],
    ] as const) {
      const at = `${colorScheme}, ${name}`
      const options = { ...size, colorScheme }
      const context = await (await sharedBrowser()).newContext(options)
      t.after(() => context.close())
      const page = await context.newPage()
      await page.goto(n.base)
      await page.getByRole('button', { name: 'Sign in' }).waitFor()
      assert.deepEqual(await unreadableText(page), [], `${at}: sign-in`)
      await page.screenshot({ path: join(OUT, `${colorScheme}-signin-${name}.png`) })
      const s = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD, options)
      await s.page.getByRole('heading', { name: 'disk almost full on db-1' }).waitFor()
      // The unread count on its accent-coloured badge is on screen before the check.
      await s.page.locator('nav span.count:not(:empty)').first().waitFor()
      // The channel chosen in the navigation (its tinted background) and a selected card.
      await s.page.locator('nav [data-key="channel:ops"]').click()
      await s.page.locator('nav [data-key="channel:ops"][aria-current="true"]').waitFor()
      await s.page.getByRole('heading', { name: 'critical on db-1' }).waitFor()
      await s.page.keyboard.press('j')
      await s.page.locator('li.card.selected').waitFor()
      assert.deepEqual(await unreadableText(s.page), [], `${at}: inbox`)
      await s.page.screenshot({ path: join(OUT, `${colorScheme}-inbox-${name}.png`), fullPage: true })
      assert.ok((await overflow(s.page)) <= 0, `${at}: the inbox view is wider than the screen`)
      await s.page.getByRole('button', { name: 'Administration' }).click()
      await s.page.locator('table.hooks').waitFor()
      assert.deepEqual(await unreadableText(s.page), [], `${at}: administration`)
      await s.page.screenshot({ path: join(OUT, `${colorScheme}-admin-${name}.png`), fullPage: true })
      assert.ok((await overflow(s.page)) <= 0, `${at}: the admin view is wider than the screen`)
      await s.page.getByRole('button', { name: 'Users', exact: true }).click()
      await s.page.locator('table.users').waitFor()
      assert.deepEqual(await unreadableText(s.page), [], `${at}: users`)
      await s.page.screenshot({ path: join(OUT, `${colorScheme}-users-${name}.png`), fullPage: true })
      assert.ok((await overflow(s.page)) <= 0, `${at}: the users view is wider than the screen`)
      await s.page.getByRole('tab', { name: 'Audit log' }).click()
      await s.page.locator('.audit li').first().waitFor()
      assert.deepEqual(await unreadableText(s.page), [], `${at}: audit log`)
      await s.page.screenshot({ path: join(OUT, `${colorScheme}-audit-${name}.png`), fullPage: true })
      for (const view of ['Manage channels', 'Push notifications']) {
        await s.page.getByRole('button', { name: view }).click()
        await s.page.getByRole('heading', { name: view, level: 2 }).waitFor()
        assert.deepEqual(await unreadableText(s.page), [], `${at}: ${view}`)
        await s.page.screenshot({
          path: join(OUT, `${colorScheme}-${view.split(' ')[0]!.toLowerCase()}-${name}.png`),
          fullPage: true,
        })
        assert.ok((await overflow(s.page)) <= 0, `${at}: ${view} is wider than the screen`)
      }
      assert.deepEqual(s.problems, [])
    }
  }
})

test('the confirmation dialog in light and dark, at laptop and phone: readable, within the screen; a click beside it cancels; an action target is revoked through it', async (t) => {
  const n = await startNotify(backends[0]!, { env: { NOTIFY_ACTION_KEY: Buffer.alloc(32, 5).toString('base64') } })
  t.after(() => n.close())
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  const saved = await n.client.put('/api/v1/action-targets/restart', {
    cookie: admin,
    body: { url: 'https://ops.example.org/hooks/restart', credential: 'super-secret-credential' },
  })
  assert.equal(saved.status, 201, saved.text)
  for (const colorScheme of ['light', 'dark'] as const) {
    for (const [size, options] of [
      ['laptop', LAPTOP],
      ['phone', PHONE],
    ] as const) {
      const { page, problems } = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD, { ...options, colorScheme })
      await page.getByRole('button', { name: 'Administration' }).click()
      const revoke = page.locator(`table.hooks tr[data-key="hook:${ops.webhookId}"]`).getByRole('button', {
        name: 'Revoke',
      })
      await revoke.click()
      const question = page.getByRole('alertdialog', { name: 'Revoke this ops webhook?' })
      await question.waitFor()
      await page.screenshot({ path: join(OUT, `confirm-${colorScheme}-${size}.png`) })
      assert.deepEqual(await unreadableText(page), [], `${colorScheme}, ${size}`)
      const box = await question.boundingBox()
      assert.ok(
        box && box.x >= 0 && box.x + box.width <= options.viewport.width,
        `${colorScheme}, ${size}: the dialog is within the screen (${JSON.stringify(box)})`,
      )
      assert.ok((await overflow(page)) <= 0, `${colorScheme}, ${size}: the page is wider than the screen`)
      // A click beside the box (on the backdrop) cancels, as Escape does; focus is back on Revoke.
      await page.mouse.click(3, 3)
      await question.waitFor({ state: 'detached' })
      assert.deepEqual(await focused(page), { name: 'Revoke', tag: 'BUTTON', in: `hook:${ops.webhookId}` })
      assert.deepEqual(problems, [], `${colorScheme}, ${size}`)
    }
  }
  const active = await n.client.get('/api/v1/webhooks', { cookie: admin })
  assert.ok(
    active.body.webhooks.every((w: { active: boolean }) => w.active),
    'no webhook revoked by a cancelled question',
  )

  // Revoking an action target deletes it and its credential: asked first, too.
  const { page, problems } = await signInByKeyboard(t, n, ADMIN, ADMIN_PASSWORD)
  await page.getByRole('button', { name: 'Users', exact: true }).click()
  await page.getByRole('tab', { name: 'Action targets' }).click()
  await page.locator('tr[data-target="restart"]').getByRole('button', { name: 'Revoke' }).click()
  const question = page.getByRole('alertdialog', { name: 'Revoke the action target restart?' })
  await question.waitFor()
  assert.match(await description(question), /Card buttons that call it fail .* stored credential is deleted/)
  await page.screenshot({ path: join(OUT, 'confirm-target-laptop.png') })
  await confirmAction(page, 'Revoke target')
  await page.locator('tr[data-target="restart"]').waitFor({ state: 'detached' })
  assert.deepEqual((await n.client.get('/api/v1/action-targets', { cookie: admin })).body.targets, [])
  assert.deepEqual(problems, [])
})
