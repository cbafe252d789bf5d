/**
 * The views whose lists can be empty (Decisions, Web candidates, Signals, Audit log) on a fresh
 * control plane, in Chromium: each says what would be listed and how it gets there instead of a
 * row of headings over nothing, readable in light and dark on a laptop and a phone; a filter that
 * matches nothing says so with a way back by keyboard; once nodes are registered the same states
 * name them. Screenshots: apps/edgegate/test-output/empty-*.png.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openEdgeDatabase } from '../src/db/open.ts'
import { addNode } from '../src/nodes/service.ts'
import { type Dashboard, LAPTOP, openPage, PHONE, startDashboard, unreadableText } from './dashboard-session.ts'

const VIEWS = [
  { path: '/decisions', view: 'decisions', table: '#decisions', title: 'No decisions yet' },
  { path: '/web', view: 'candidates', table: '#candidates', title: 'No candidates in the last 15m' },
  { path: '/signals', view: 'signals', table: '#signals', title: 'No web signals yet' },
  { path: '/audit', view: 'audit', table: '#audit', title: 'No audit entries yet' },
] as const

describe('empty dashboard views', () => {
  let dash: Dashboard

  before(async () => {
    dash = await startDashboard([])
  })
  after(() => dash?.close())

  test('a fresh control plane: each view says what would be listed and how it gets there, light and dark, laptop and phone', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page, problems, shot } = await openPage(dash, '/', { colorScheme })
      try {
        for (const v of VIEWS) {
          await page.goto(`${dash.gate.base}${v.path}`)
          const state = page.locator(`section.empty-state[data-empty=${v.view}]`)
          await state.waitFor()
          assert.equal((await state.locator('h2').textContent())?.trim(), v.title)
          assert.equal(await page.locator(v.table).count(), 0, `${v.path}: no table of headings over nothing`)
          // The section is named by its heading for screen readers.
          assert.equal(await page.getByRole('region', { name: v.title }).count(), 1)
          for (const [size, viewport] of [
            ['laptop', LAPTOP],
            ['phone', PHONE],
          ] as const) {
            await page.setViewportSize(viewport)
            assert.deepEqual(await unreadableText(page), [], `${v.path}, ${colorScheme}, ${size}`)
            const overflow = await page.evaluate(
              () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
            )
            assert.ok(overflow <= 0, `${v.path} ${size}: ${overflow}px wider than the screen`)
            await shot(`empty-${v.view}-${colorScheme}-${size}`)
          }
          await page.setViewportSize(LAPTOP)
        }
        // How each list gets its first entry, with nothing registered yet.
        await page.goto(`${dash.gate.base}/decisions`)
        assert.match(
          (await page.locator('[data-empty=decisions]').textContent()) ?? '',
          /No gate is registered[\s\S]*edgegate node add --kind sshgate edge-ssh-1/,
        )
        await page.goto(`${dash.gate.base}/web`)
        const web = (await page.locator('[data-empty=candidates]').textContent()) ?? ''
        assert.match(web, /TLS gates sending sightings: none registered yet, edgegate node add --kind tlsgate tls-1/)
        assert.match(
          web,
          /web signal nodes sending signals: none registered yet, edgegate node add --kind websignal web-1/,
        )
        await page.goto(`${dash.gate.base}/signals`)
        assert.match(
          (await page.locator('[data-empty=signals]').textContent()) ?? '',
          /No web signal node is registered[\s\S]*edgegate node add --kind websignal web-1/,
        )
        assert.deepEqual(problems, [])
      } finally {
        await context.close()
      }
    }
  })

  test('a filter that matches nothing says so, and the way back to the whole list is a keyboard stop', async () => {
    const { context, page, problems, shot } = await openPage(dash, '/')
    try {
      for (const [path, view, title, link, back] of [
        [
          '/decisions?status=blocked',
          'decisions',
          'No decisions match these filters',
          'Show every decision',
          '/decisions',
        ],
        [
          '/audit?action=node&actor=%3Cb%3Enobody%3C%2Fb%3E',
          'audit',
          'No entries match these filters',
          'Show every entry',
          '/audit',
        ],
      ] as const) {
        await page.goto(`${dash.gate.base}${path}`)
        const state = page.locator(`[data-empty=${view}]`)
        assert.equal((await state.locator('h2').textContent())?.trim(), title)
        if (view === 'audit') {
          assert.match(
            (await state.textContent()) ?? '',
            /No entry by an actor named exactly <b>nobody<\/b> for nodes\./,
          )
          assert.equal(await page.locator('main b').count(), 0, 'the actor is text, not markup')
        } else {
          assert.match((await state.textContent()) ?? '', /Nothing live for status blocked\./)
        }
        await page.setViewportSize(PHONE)
        await shot(`empty-${view}-filtered-phone`)
        await page.setViewportSize(LAPTOP)
        let onLink = false
        for (let i = 0; i < 30 && !onLink; i++) {
          await page.keyboard.press('Tab')
          onLink = (await page.evaluate(() => document.activeElement?.textContent)) === link
        }
        assert.ok(onLink, `Tab reaches "${link}"`)
        await page.keyboard.press('Enter')
        await page.waitForURL((u) => u.pathname === back && u.search === '')
      }
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })

  test('with nodes registered the empty states name them, and the audit log lists their registration', async () => {
    const d = await openEdgeDatabase(dash.database, 1)
    try {
      await addNode(d.db, 'tls-edge-1', 'tlsgate', { type: 'token' }, 'cli:test')
      await addNode(d.db, 'web-shop', 'websignal', { type: 'token' }, 'cli:test')
    } finally {
      await d.close()
    }
    const { context, page, problems, shot } = await openPage(dash, '/decisions')
    try {
      const decisions = (await page.locator('[data-empty=decisions]').textContent()) ?? ''
      assert.match(decisions, /edgegate decision block --instance tls-edge-1 FINGERPRINT/)
      assert.doesNotMatch(decisions, /No gate is registered/)
      await page.goto(`${dash.gate.base}/web`)
      const web = (await page.locator('[data-empty=candidates]').textContent()) ?? ''
      assert.match(web, /TLS gates sending sightings: tls-edge-1/)
      assert.match(web, /web signal nodes sending signals: web-shop/)
      await page.setViewportSize(PHONE)
      await shot('empty-candidates-with-nodes-phone')
      await page.setViewportSize(LAPTOP)
      // The longer window is one keyboard stop away.
      await page.locator('[data-empty=candidates] a', { hasText: 'the last 30 minutes' }).focus()
      await page.keyboard.press('Enter')
      await page.locator('[data-empty=candidates] h2', { hasText: 'No candidates in the last 30m' }).waitFor()
      await page.goto(`${dash.gate.base}/signals`)
      assert.match(
        (await page.locator('[data-empty=signals]').textContent()) ?? '',
        /Registered: web-shop\. None has sent a signal/,
      )
      await page.goto(`${dash.gate.base}/audit`)
      assert.equal(await page.locator('[data-empty]').count(), 0)
      assert.equal(await page.locator('#audit tbody tr').count(), 2)
      assert.deepEqual(problems, [])
    } finally {
      await context.close()
    }
  })
})
