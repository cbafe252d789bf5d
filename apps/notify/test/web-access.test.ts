/**
 * The issue #21 views in Debian's Chromium against a real notify (SQLite and PostgreSQL):
 * live card action buttons with their outcome (and earlier outcomes after a reload), a slash command with arguments and its
 * reply, the user panel (promote, audit log, action targets), and desktop sign-in approval
 * with a wrong and then the right code. Screenshots go to apps/notify/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { freePort, startOidcProvider } from '@gatehouse/testkit'
import { confirmAction, newContext, signIn as signInAs } from './browser.ts'
import { startCallbackServer } from './callback-server.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, member, type Notify, reader, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })
const KEY = Buffer.alloc(32, 5).toString('base64')

// The deliberately wrong desktop code answers 400: not a problem.
const signIn = (n: Notify, user: string, password: string, phone = false) =>
  signInAs(n, user, password, phone, [401, 400])

for (const backend of backends) {
  describe(`web client: actions, users, desktop sign-in (${backend.name})`, () => {
    test('card actions and slash commands run from the browser with their outcome', async (t) => {
      const cb = await startCallbackServer()
      t.after(() => cb.close())
      const n = await startNotify(backend, { env: { NOTIFY_ACTION_KEY: KEY } })
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      await reader(n, admin, 'otto')
      await member(n, admin, 'ops', 'otto', 'operator')
      await n.client.put('/api/v1/action-targets/restart', {
        cookie: admin,
        body: { url: `${cb.base}/ok`, allow_private: true },
      })
      await n.client.post('/api/v1/admin/import/slash-commands', {
        cookie: admin,
        body: {
          dry_run: false,
          commands: [{ trigger: 'deploy', url: `${cb.base}/ok`, token: 'tok', allow_private: true }],
        },
      })
      await n.client.post('/api/v1/notifications', {
        token: ops.token,
        body: {
          version: 1,
          title: 'web-3 unhealthy',
          severity: 'warning',
          actions: [
            { type: 'registered', label: 'Restart web-3', target: 'restart' },
            { type: 'registered', label: 'Page on-call', target: 'gone' },
          ],
        },
      })
      const otto = await signIn(n, 'otto', 'otto-password-123')
      t.after(() => otto.close())
      const { page } = otto
      await page.getByRole('button', { name: 'Restart web-3' }).click()
      await page.getByText('✓ Done (200)').waitFor()
      await page.getByRole('button', { name: 'Page on-call' }).click()
      await page.getByText(/✗ Failed: action target gone was revoked/).waitFor()
      assert.equal(cb.received.filter((r) => r.path === '/ok').length, 1)
      await page.screenshot({ path: join(OUT, `actions-laptop-${backend.name}.png`) })

      // After a reload (and for another reader) the earlier outcomes are beside the buttons
      // and in the card's history, with who ran them.
      await page.reload()
      await page.getByText('Last run by otto: ✓ Done (200)').waitFor()
      await page.getByText(/Last run by otto: ✗ Failed: action target gone was revoked/).waitFor()
      const card = page.locator('li.card', { hasText: 'web-3 unhealthy' })
      await card.getByRole('button', { name: 'History' }).click()
      await card.locator('.history li', { hasText: 'otto ran “Restart web-3”: succeeded (200)' }).waitFor()
      await card.locator('.history li.failure', { hasText: 'otto ran “Page on-call”: failed' }).waitFor()
      assert.equal(cb.received.filter((r) => r.path === '/ok').length, 1, 'showing outcomes never calls again')
      await page.screenshot({ path: join(OUT, `actions-earlier-${backend.name}.png`) })

      await page.getByRole('button', { name: 'ops' }).click()
      // A live card arrives while the reader types a command: the bar is not rebuilt or moved
      // under the typing (a MutationObserver sees any removal of it), and the text is whole.
      const bar = page.getByLabel('Slash command')
      await bar.pressSequentially('/deploy web')
      await page.evaluate(() => {
        const form = document.querySelector('form.command-bar')!
        const w = window as unknown as { barMoves: number }
        w.barMoves = 0
        new MutationObserver((records) => {
          for (const r of records) for (const n of r.removedNodes) if (n.contains(form)) w.barMoves++
        }).observe(document.querySelector('section.content')!, { childList: true, subtree: true })
      })
      await n.client.post('/api/v1/notifications', { token: ops.token, body: { version: 1, title: 'deploy queued' } })
      await page.locator('li.card', { hasText: 'deploy queued' }).waitFor()
      await bar.pressSequentially(' --canary')
      assert.equal(await bar.inputValue(), '/deploy web --canary')
      assert.equal(await page.evaluate(() => (window as unknown as { barMoves: number }).barMoves), 0)
      await page.getByRole('button', { name: 'Run' }).click()
      await page.locator('.command-reply.success', { hasText: 'done' }).waitFor()
      const form = new URLSearchParams(cb.received.at(-1)!.body)
      assert.equal(form.get('text'), 'web --canary')
      assert.equal(form.get('user_name'), 'otto')
      await page.screenshot({ path: join(OUT, `slash-command-${backend.name}.png`) })
      assert.deepEqual(otto.problems, [])
    })

    test('user panel, audit log and action targets; desktop sign-in approval', async (t) => {
      const n = await startNotify(backend, { env: { NOTIFY_ACTION_KEY: KEY } })
      t.after(() => n.close())
      const adminCookie = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, adminCookie, 'ops')
      await reader(n, adminCookie, 'vera')
      let walt = await reader(n, adminCookie, 'walt')
      const waltToken = await n.client.post('/api/v1/me/tokens', { cookie: walt, body: { name: 'cron' } })
      assert.equal(waltToken.status, 201, waltToken.text)
      // A reader created and never signed in: the panel says so (the others signed in above).
      await n.client.post('/api/v1/users', {
        cookie: adminCookie,
        body: { username: 'xena', password: 'xena-password-123' },
      })
      const admin = await signIn(n, ADMIN, ADMIN_PASSWORD)
      t.after(() => admin.close())
      const { page } = admin
      await page.getByRole('button', { name: 'Users', exact: true }).click()
      const vera = page.locator('tr[data-user="vera"]')
      await page.locator('tr[data-user="xena"]').getByText('never signed in').waitFor()
      await vera.getByText('signed in just now').waitFor()
      await vera.getByRole('button', { name: 'Make administrator' }).click()
      await page.getByText('vera promoted').waitFor()
      // Removing an administrator asks first: Cancel leaves vera one, confirming demotes her.
      const isAdmin = async (username: string) =>
        (await n.client.get('/api/v1/users', { cookie: adminCookie })).body.users.find(
          (u: { username: string }) => u.username === username,
        ).admin
      await vera.getByRole('button', { name: 'Remove administrator' }).click()
      const demote = page.getByRole('alertdialog', { name: 'Remove vera as administrator?' })
      await demote.getByText('vera no longer manages users, channels, webhooks or action targets').waitFor()
      await demote.getByRole('button', { name: 'Cancel' }).click()
      await demote.waitFor({ state: 'detached' })
      assert.equal(await isAdmin('vera'), true, 'a cancelled question demotes nobody')
      await vera.getByRole('button', { name: 'Remove administrator' }).click()
      await confirmAction(page, 'Remove administrator')
      await page.getByText('vera demoted').waitFor()
      assert.equal(await isAdmin('vera'), false)
      // Making an administrator asks nothing; vera is one again for her phone below.
      await vera.getByRole('button', { name: 'Make administrator' }).click()
      await page.getByText('vera promoted').waitFor()
      await vera.getByRole('button', { name: 'Remove administrator' }).waitFor()
      await vera.getByLabel('Channel for vera').selectOption('ops')
      await vera.getByLabel('Role for vera').selectOption('operator')
      await vera.getByRole('button', { name: 'Assign role' }).click()
      await page.getByText('vera is operator of ops').waitFor()
      // Disabling yourself is not offered; the server refuses demoting the last administrator elsewhere.
      assert.equal(await page.locator(`tr[data-user="${ADMIN}"]`).getByRole('button', { name: 'Disable' }).count(), 0)
      await page.screenshot({ path: join(OUT, `users-laptop-${backend.name}.png`) })

      // Disable and enable, revoke sessions, reset a password: each ends walt's session.
      const me = (cookie: string) => n.client.get('/api/v1/auth/me', { cookie })
      const waltRow = page.locator('tr[data-user="walt"]')
      // Disable asks first, naming what ends: Cancel leaves walt in, confirming shuts him out.
      await waltRow.getByRole('button', { name: 'Disable' }).click()
      const disable = page.getByRole('alertdialog', { name: 'Disable walt?' })
      await disable
        .getByText(
          'walt can no longer sign in; their 1 session (browsers and desktop apps) ends at once, and their 1 reader token stops working.',
        )
        .waitFor()
      await page.screenshot({ path: join(OUT, `confirm-disable-${backend.name}.png`) })
      await disable.getByRole('button', { name: 'Cancel' }).click()
      await disable.waitFor({ state: 'detached' })
      assert.equal((await me(walt)).status, 200, 'a cancelled question disables nobody')
      await waltRow.getByRole('button', { name: 'Disable' }).click()
      await confirmAction(page, 'Disable reader')
      await page.getByText('walt disabled').waitFor()
      await waltRow.getByText('disabled').waitFor()
      assert.equal((await me(walt)).status, 401)
      await waltRow.getByRole('button', { name: 'Enable' }).click()
      await page.getByText('walt enabled').waitFor()
      walt = await n.client.login('walt', 'walt-password-123')
      // The list counts walt's new session once it loads again.
      await page.getByRole('tab', { name: 'Users' }).click()
      await waltRow.getByRole('button', { name: 'Revoke sessions' }).click()
      const revoke = page.getByRole('alertdialog', { name: 'End every session of walt?' })
      await revoke
        .getByText(
          "walt's 1 session (browsers and desktop apps) ends at once; they sign in again to go on. Their 1 reader token keeps working.",
        )
        .waitFor()
      await page.keyboard.press('Escape')
      await revoke.waitFor({ state: 'detached' })
      assert.equal((await me(walt)).status, 200, 'a cancelled question ends no session')
      await waltRow.getByRole('button', { name: 'Revoke sessions' }).click()
      await confirmAction(page, 'Revoke sessions')
      await page.getByText('walt: sessions revoked (1 session ended)').waitFor()
      assert.equal((await me(walt)).status, 401)
      walt = await n.client.login('walt', 'walt-password-123')
      await page.getByLabel('New password for walt').fill('walt-new-password-456')
      await waltRow.getByRole('button', { name: 'Reset password' }).click()
      await page.getByText('walt: password reset, sessions ended').waitFor()
      assert.equal((await me(walt)).status, 401)
      await n.client.login('walt', 'walt-new-password-456')

      await page.getByRole('tab', { name: 'Audit log' }).click()
      await page.locator('.audit li', { hasText: 'user.update' }).first().waitFor()
      await page.locator('.audit li', { hasText: 'member.set' }).first().waitFor()
      // Details are words, not a JSON object.
      const memberSet = page.locator('.audit li', { hasText: 'member.set' }).first()
      assert.match(await memberSet.innerText(), /member\.set ops\/vera role: operator$/)
      assert.equal(await page.locator('.audit li', { hasText: /[{}]/ }).count(), 0)
      // Fewer entries than a page: there is nothing older to load, so no Load older button.
      assert.equal(await page.getByRole('button', { name: 'Load older' }).isVisible(), false)
      await page.screenshot({ path: join(OUT, `audit-laptop-${backend.name}.png`) })

      await page.getByRole('tab', { name: 'Action targets' }).click()
      await page.getByLabel('Name').fill('restart')
      await page.getByLabel('Callback URL (https)').fill('https://ops.example.org/hooks/restart')
      await page.getByLabel('Bearer credential (optional, write-only)').fill('super-secret-credential')
      await page.getByRole('button', { name: 'Save target' }).click()
      await page.locator('tr[data-target="restart"]').waitFor()
      assert.equal(await page.getByText('super-secret-credential').count(), 0)
      await page
        .getByLabel('Slash commands JSON')
        .fill(JSON.stringify([{ trigger: 'deploy', url: 'https://ops.example.org/slash', token: 'slash-token-1' }]))
      await page.getByRole('button', { name: 'Dry run' }).click()
      await page.getByText('Dry run: would create 1, existing 0').waitFor()
      await page.getByRole('button', { name: 'Import', exact: true }).click()
      await page.locator('tr[data-target="slash-deploy"]').waitFor()
      await page.screenshot({ path: join(OUT, `targets-laptop-${backend.name}.png`) })

      // Desktop sign-in: the app starts, vera approves on her phone with a wrong and then the right code.
      const started = (await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'Gatehouse Desktop' } })).body
      const phone = await signIn(n, 'vera', 'vera-password-123', true)
      t.after(() => phone.close())
      await phone.page.goto(started.verification_url)
      await phone.page.getByText('Sign in a desktop app?').waitFor()
      await phone.page.getByText('Gatehouse Desktop').waitFor()
      assert.equal(await phone.page.getByText(started.user_code).count(), 0)
      await phone.page.getByLabel('Code shown in the app').fill('BBBB-BBBB')
      await phone.page.getByRole('button', { name: 'Approve' }).click()
      await phone.page.getByText('4 attempts left').waitFor()
      await phone.page.screenshot({ path: join(OUT, `desktop-approval-phone-${backend.name}.png`) })
      assert.equal(
        (await n.client.post('/api/v1/auth/desktop/token', { body: { device_code: started.device_code } })).status,
        428,
      )
      await phone.page.getByLabel('Code shown in the app').fill(started.user_code.toLowerCase())
      await phone.page.getByRole('button', { name: 'Approve' }).click()
      await phone.page.getByText('Desktop app signed in').waitFor()
      const token = await n.client.post('/api/v1/auth/desktop/token', { body: { device_code: started.device_code } })
      assert.equal(token.status, 200)
      assert.equal(token.body.user.username, 'vera')
      await phone.page.getByRole('button', { name: 'Continue to Notify' }).click()
      await phone.page.getByText('Signed in as vera').waitFor()
      await phone.page.getByRole('button', { name: 'Users', exact: true }).click()
      await phone.page.locator('tr[data-user="vera"]').waitFor()
      await phone.page.screenshot({ path: join(OUT, `users-phone-${backend.name}.png`) })
      assert.deepEqual([...admin.problems, ...phone.problems], [])
    })
  })
}

describe('web client: identity-provider sign-in in Chromium', () => {
  test('the provider button signs a reader in across sites and lands on the inbox', async (t) => {
    // notify on "localhost", the provider on 127.0.0.1: another site, as in production, so the
    // SameSite rules of the state and session cookies are exercised for real.
    const port = await freePort()
    const op = await startOidcProvider({
      redirectUris: [`http://localhost:${port}/api/v1/auth/oidc/callback`],
      publicClientId: 'notify-web',
    })
    t.after(() => op.stop())
    op.loginAs('olivia')
    const n = await startNotify(backends[0]!, {
      port,
      env: {
        NOTIFY_PUBLIC_URL: `http://localhost:${port}`,
        NOTIFY_OAUTH_ISSUER: op.issuer,
        NOTIFY_OIDC_CLIENT_ID: 'notify-web',
      },
    })
    t.after(() => n.close())
    const context = await newContext()
    t.after(() => context.close())
    const page = await context.newPage()
    await page.goto(`http://localhost:${port}/`)
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).click()
    await page.getByText('Signed in as olivia').waitFor()
    assert.equal(new URL(page.url()).origin, `http://localhost:${port}`)
    await page.screenshot({ path: join(OUT, 'oidc-signed-in.png') })
  })
})
