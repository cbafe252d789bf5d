/**
 * The console's provider view in Chromium against a real dnsctl and the Cloudflare-style HTTPS
 * double of the provider tests (with a real knotd as the zone's assigned nameserver): the
 * allowlisted zones, a zone's records, a plan (exact record-ID delete, attributes kept) applied
 * and verified, the safety guard, and the allowlist validated and committed.
 *
 * The provider endpoints and their double come from branch r2-e2a. A dnsctl without them (this
 * branch before the merge) gets the view's own answer checked instead: it says they are missing.
 */
import assert from 'node:assert/strict'
import { chmodSync, existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Browser, createTestCa, type Knot, type Page, startKnot, type TestCa, tempDir } from '@gatehouse/testkit'
import {
  type ConsoleHarness,
  launchChromium,
  lowContrast,
  pageProblems,
  SHOTS,
  screenshot,
  signedInPage,
  startConsoleHarness,
} from './console-helpers.ts'

const ZONE = 'shop.test'
const DOUBLE = join(import.meta.dirname, 'provider-double.ts')

/** The double's surface this test uses (its module arrives with the provider endpoints). */
interface Double {
  url: string
  tokens: Map<string, Set<string>>
  zones: Map<string, { records: { name: string; type: string; content?: string }[] }>
  addZone(name: string, records: Record<string, unknown>[], nameServers: string[]): Promise<unknown>
  close(): Promise<void>
}

describe('console: external provider', () => {
  let ca: TestCa | undefined
  let knot: Knot | undefined
  let provider: Double | undefined
  let h: ConsoleHarness
  let browser: Browser
  let page: Page
  const dir = tempDir('dnsctl-console-provider-')
  before(async () => {
    const env: Record<string, string> = {}
    if (existsSync(DOUBLE)) {
      ca = createTestCa()
      knot = await startKnot()
      const { startProviderDouble } = (await import(DOUBLE)) as {
        startProviderDouble(ca: TestCa, knot: Knot): Promise<Double>
      }
      provider = await startProviderDouble(ca, knot)
      provider.tokens.set('edit-token', new Set(['zone:read', 'dns:read', 'dns:edit']))
      await provider.addZone(
        ZONE,
        [
          { name: ZONE, type: 'NS', content: 'ns1.provider.test', ttl: 86400 },
          { name: ZONE, type: 'NS', content: 'ns2.provider.test', ttl: 86400 },
          { name: `www.${ZONE}`, type: 'A', content: '192.0.2.10', ttl: 300, proxied: true, comment: 'web' },
          { name: `www.${ZONE}`, type: 'A', content: '192.0.2.11', ttl: 300, proxied: true, comment: 'web' },
          { name: `mail.${ZONE}`, type: 'A', content: '192.0.2.25', ttl: 3600 },
        ],
        ['127.0.0.1'],
      )
      const tokenFile = join(dir.path, 'token')
      writeFileSync(tokenFile, 'edit-token\n')
      chmodSync(tokenFile, 0o600)
      Object.assign(env, {
        DNSCTL_PROVIDER_ZONES: `${ZONE},missing.test`,
        DNSCTL_PROVIDER_TOKEN_FILE: tokenFile,
        DNSCTL_PROVIDER_API_URL: provider.url,
        DNSCTL_PROVIDER_CA_FILE: ca.caPath,
        DNSCTL_PROVIDER_DNS_PORT: String(knot.port),
        DNSCTL_PROVIDER_DNS_VERIFY_TIMEOUT: '3s',
      })
    }
    h = await startConsoleHarness({ env })
    browser = await launchChromium()
    page = await signedInPage(browser, h)
  })
  after(async () => {
    await browser?.close()
    await h?.close()
    await provider?.close()
    await knot?.stop()
    ca?.remove()
    dir.remove()
  })

  test('allowlisted zones and their records', async (t) => {
    await page.getByRole('link', { name: 'Provider' }).click()
    if (!provider) {
      t.diagnostic('this dnsctl has no provider endpoints (branch r2-e2a not merged): the view says so')
      await page.getByText('This dnsctl has no provider endpoints').waitFor()
      return
    }
    const zones = page.getByRole('table', { name: 'Allowlisted zones' })
    await zones.getByRole('cell', { name: 'found', exact: true }).waitFor()
    assert.match(await zones.innerText(), /missing\.test\s+the provider has no such zone|missing\.test\s+.*not/)
    await page.getByRole('button', { name: `Open ${ZONE}` }).click()
    const records = page.locator('table.provider-records')
    await records.getByRole('cell', { name: '192.0.2.11' }).waitFor()
    assert.equal(await records.locator('tbody tr').count(), 5)
    // The "Change" select is as wide as its longest choice, on a laptop and on a phone.
    const change = page.getByLabel('Change', { exact: true })
    const widths = () =>
      change.evaluate((select) => {
        const probe = select.cloneNode(true) as HTMLSelectElement
        probe.removeAttribute('id')
        probe.style.width = 'max-content'
        probe.style.position = 'absolute'
        select.parentElement!.append(probe)
        const needed = probe.getBoundingClientRect().width
        probe.remove()
        return { needed, shown: select.getBoundingClientRect().width }
      })
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport)
      const { needed, shown } = await widths()
      assert.ok(
        shown >= needed - 0.5,
        `${viewport.width}px: the Change select is ${shown}px wide, its text needs ${needed}px`,
      )
      await screenshot(page, viewport.width < 600 ? 'provider-phone' : 'provider')
    }
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  test('a plan shows the exact record-ID delete and the create; applying verifies it', async () => {
    if (!provider) return
    const records = page.locator('table.provider-records')
    const row = records.locator('tr', { hasText: '192.0.2.11' })
    const id = (await row.locator('code').innerText()).trim()
    await page.getByLabel('Name', { exact: true }).fill('www')
    await page.getByLabel('Records (one per line)').fill('192.0.2.10\n192.0.2.12')
    await page.getByRole('button', { name: 'Plan', exact: true }).click()
    const plan = page.getByRole('region', { name: 'Plan' })
    await plan.getByText('Plan: 1 delete, 0 updates, 1 create (of 5 records)').waitFor()
    await plan.getByText(`delete ${id}: www 300 A 192.0.2.11`).waitFor()
    await plan.getByText('create www 300 A 192.0.2.12 (proxied)').waitFor()
    await screenshot(page, 'provider-plan')
    const contents = () =>
      provider!.zones
        .get(ZONE)!
        .records.filter((r) => r.name === `www.${ZONE}`)
        .map((r) => r.content)
        .sort()
    assert.deepEqual(contents(), ['192.0.2.10', '192.0.2.11'], 'a plan writes nothing')
    await page.getByRole('button', { name: 'Apply at the provider' }).click()
    await page.getByText(/Applied: API state verified, nameservers verified/).waitFor({ timeout: 15_000 })
    assert.deepEqual(contents(), ['192.0.2.10', '192.0.2.12'])
    await records.getByRole('cell', { name: '192.0.2.12' }).waitFor()
  })

  test('the safety guard: touching the apex NS set needs force', async () => {
    if (!provider) return
    await page.getByLabel('Name', { exact: true }).fill('@')
    await page.getByLabel('Type', { exact: true }).selectOption('NS')
    await page.getByLabel('Change', { exact: true }).selectOption('delete')
    await page.getByRole('button', { name: 'Plan', exact: true }).click()
    await page
      .getByRole('region', { name: 'Plan' })
      .getByText(/Safety guard:/)
      .waitFor()
    await page.getByLabel(/Force/).waitFor()
    await screenshot(page, 'provider-guard')
    // Keyboard: the plan has the focus; Escape closes it and gives the focus back to Plan.
    assert.equal(
      await page.getByRole('button', { name: 'Apply at the provider' }).evaluate((b) => b === document.activeElement),
      true,
    )
    await page.keyboard.press('Escape')
    await page.getByRole('group', { name: 'Plan at the provider' }).waitFor({ state: 'detached' })
    assert.equal(
      await page.getByRole('button', { name: 'Plan', exact: true }).evaluate((b) => b === document.activeElement),
      true,
    )
  })

  test('the allowlist: validated at the provider, committed as a revision by the console user', async () => {
    if (!provider) return
    const zones = page.getByLabel('Allowlisted zones (one per line)')
    await zones.fill(`${ZONE}\nNope.Test.`)
    await page.getByRole('button', { name: 'Validate' }).click()
    const validation = page.getByRole('table', { name: 'Validation at the provider' })
    await validation.getByRole('cell', { name: 'nope.test' }).waitFor()
    assert.equal(await zones.inputValue(), `nope.test\n${ZONE}`)
    await zones.fill(ZONE)
    await page.getByRole('button', { name: 'Commit allowlist' }).click()
    await page.getByText(/Allowlist committed as revision/).waitFor()
    await page.getByRole('cell', { name: 'console:tester' }).waitFor()
    await page.getByText(/Committed by console:tester/).waitFor()
    // The zone list reloads after the commit: missing.test leaves it.
    const listed = page.getByRole('table', { name: 'Allowlisted zones' })
    await listed.getByRole('cell', { name: 'missing.test' }).waitFor({ state: 'detached' })
    assert.equal(await listed.locator('tbody tr').count(), 1)
    await screenshot(page, 'provider-allowlist')
  })

  test('the allowlist: its buttons keep a space above the revisions heading, light and dark, laptop and phone', async () => {
    if (!provider) return
    const card = page.getByRole('region', { name: 'Zone allowlist' })
    const heading = card.getByRole('heading', { name: 'Committed revisions' })
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      for (const viewport of [
        { width: 1280, height: 800 },
        { width: 390, height: 844 },
      ]) {
        await page.setViewportSize(viewport)
        // Fresh, as the view first shows it: no validation table or notice between the two.
        await page.goto(`${h.consoleBase}/console/#/zones`)
        await page.reload()
        await page.getByRole('link', { name: 'Provider' }).click()
        await card.getByRole('cell', { name: 'console:tester' }).waitFor()
        assert.equal(await card.getByRole('table', { name: 'Validation at the provider' }).count(), 0)
        const buttons = await card.getByRole('button', { name: 'Commit allowlist' }).boundingBox()
        const top = (await heading.boundingBox())!.y
        const gap = top - (buttons!.y + buttons!.height)
        assert.ok(gap >= 12, `${scheme} ${viewport.width}px: ${gap.toFixed(1)} px between the buttons and the heading`)
        // The revisions fit inside the card (on a phone each becomes a block).
        assert.ok(
          await card.evaluate((el) => [...el.querySelectorAll('table')].every((t) => t.scrollWidth <= el.clientWidth)),
          `${scheme} ${viewport.width}px: the revisions table overflows the card`,
        )
        assert.deepEqual(await lowContrast(page), [], `${scheme} ${viewport.width}px`)
        const name = `provider-allowlist-card-${scheme}${viewport.width < 600 ? '-phone' : ''}`
        await card.screenshot({ path: join(SHOTS, `${name}.png`) })
      }
    }
    await page.emulateMedia({ colorScheme: 'light' })
    await page.setViewportSize({ width: 1280, height: 860 })
  })

  test('no script errors or CSP violations on the way', () => {
    assert.deepEqual(pageProblems(page), [])
  })
})
