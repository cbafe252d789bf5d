/**
 * A replica / HA peer whose knotd is not running: NOTIFY and the HA peer's SOA check go over a
 * connected UDP socket, so the ICMP port unreachable of the closed port fails them at once with
 * a message that says so, instead of after the whole timeout. The timeouts here are two minutes:
 * a check that waited for them instead would say "no answer ... within 120000 ms" (and outlast
 * the test's patience), not "refused". The console's HA view shows the same reason, in Chromium.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { type Browser, freePort, type Knot, startKnot, waitFor } from '@gatehouse/testkit'
import {
  type ConsoleHarness,
  launchChromium,
  lowContrast,
  pageProblems,
  screenshot,
  signedInPage,
  startConsoleHarness,
} from './console-helpers.ts'
import { json, ZONE, zoneText } from './helpers.ts'
import { MAIN } from './processes.ts'

const run = promisify(execFile)

/** Make `replica` a Knot secondary of `zones` on `primaryPort`, accepting NOTIFY from loopback. */
async function replicate(replica: Knot, primaryPort: number, zones: string[]): Promise<void> {
  const steps = [
    ['conf-set', 'remote[primary]'],
    ['conf-set', 'remote[primary].address', `127.0.0.1@${primaryPort}`],
    ['conf-set', 'acl[from-primary]'],
    ['conf-set', 'acl[from-primary].address', '127.0.0.1'],
    ['conf-set', 'acl[from-primary].action', 'notify'],
    ...zones.flatMap((z) => [
      ['conf-set', `zone[${z}]`],
      ['conf-set', `zone[${z}].master`, 'primary'],
      ['conf-set', `zone[${z}].acl`, 'from-primary'],
    ]),
  ]
  await replica.knotc('conf-begin')
  for (const step of steps) await replica.knotc(...step)
  await replica.knotc('conf-commit')
}

describe('a replica or HA peer knotd that is not running', () => {
  let primary: Knot
  let replica: Knot
  let h: ConsoleHarness
  let browser: Browser | undefined
  let replicaStopped = false
  let peerApi: number

  before(async () => {
    ;[primary, replica] = await Promise.all([startKnot(), startKnot()])
    await replicate(replica, primary.port, [ZONE, 'other.test'])
    const metrics = await freePort()
    peerApi = await freePort()
    h = await startConsoleHarness({
      knot: primary,
      env: {
        DNSCTL_NOTIFY_REPLICAS: `127.0.0.1:${replica.port}`,
        DNSCTL_NOTIFY_TIMEOUT: '2m',
        DNSCTL_HA_ROLE: 'primary',
        DNSCTL_METRICS_LISTEN: `127.0.0.1:${metrics}`,
        // Nothing listens there: the peer's dnsctl is not the subject here.
        DNSCTL_HA_PEER_API: `127.0.0.1:${peerApi}`,
        DNSCTL_HA_PEER_KNOT: `127.0.0.1:${replica.port}`,
        DNSCTL_HA_PEER_TIMEOUT: '2m',
      },
    })
  })

  after(async () => {
    await browser?.close()
    await h?.close()
    await primary?.stop()
    if (!replicaStopped) await replica?.stop()
  })

  test('a running replica acknowledges the NOTIFY, transfers the zone, and the HA status sees it in sync', async () => {
    const res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(10) })
    const body = await json(res)
    assert.equal(res.status, 201, JSON.stringify(body))
    assert.deepEqual(body.warnings, [])
    await waitFor('the replica to serve serial 10', async () => (await replica.soaSerial(ZONE)) === 10)
    assert.match(replica.log(), /\[example\.test\.\] notify, incoming, remote 127\.0\.0\.1@\d+/i)
    const st = await waitFor('the HA status to see the replica in sync', async () => {
      const s = await json(await h.call('GET', '/v1/status/ha?include_peer=false'))
      return s.replication.state === 'in_sync' ? s : undefined
    })
    assert.deepEqual(st.replication.zones, [
      { zone: ZONE, primary_serial: 10, secondary_serial: 10, in_sync: true, lag_seconds: 0 },
    ])
    assert.equal(st.replication.error, undefined)
  })

  test('a stopped replica: NOTIFY fails at once as refused, the HA status says peer_unreachable and why', async () => {
    const port = replica.port
    await replica.stop()
    replicaStopped = true
    const refused = new RegExp(`127\\.0\\.0\\.1:${port} refused the query: nothing listens there`)

    const res = await h.call('PUT', '/v1/zones/other.test', {
      role: 'primary',
      zone_text: zoneText(5).replaceAll('example.test', 'other.test'),
    })
    const body = await json(res)
    assert.equal(res.status, 201, JSON.stringify(body))
    assert.equal(body.warnings.length, 1, JSON.stringify(body.warnings))
    assert.match(body.warnings[0], /^NOTIFY for other\.test\. to 127\.0\.0\.1:\d+ failed \(/)
    assert.match(body.warnings[0], refused)
    assert.match(body.warnings[0], /next SOA poll/)
    // The zone itself was published: a dead replica costs a warning, nothing else.
    assert.equal(await primary.soaSerial('other.test'), 5)

    const st = await json(await h.call('GET', '/v1/status/ha?include_peer=false'))
    assert.equal(st.replication.state, 'peer_unreachable')
    // Nothing listens on the peer API address either: said in words, like the knotd check.
    const withPeer = await json(await h.call('GET', '/v1/status/ha'))
    assert.equal(withPeer.peer.reachable, false)
    assert.equal(
      withPeer.peer.error,
      `the peer's dnsctl: 127.0.0.1:${peerApi} refused the connection: nothing listens there (its dnsctl is not running, or not with --metrics-listen 127.0.0.1:${peerApi})`,
    )
    assert.match(st.replication.error, /^the peer's knotd: /)
    assert.match(st.replication.error, refused)
    assert.deepEqual(
      st.replication.zones.map((z: { zone: string; primary_serial: number; secondary_serial: null }) => [
        z.zone,
        z.primary_serial,
        z.secondary_serial,
      ]),
      [
        [ZONE, 10, null],
        ['other.test', 5, null],
      ],
    )

    // The operator's command shows the reason under the replication line.
    const { stdout } = await run(process.execPath, [MAIN, 'ha', 'status', '--url', h.base], {
      env: { ...process.env, NO_COLOR: '1' },
    })
    assert.match(stdout, /^replication: peer_unreachable, 0\/2 zones in sync$/m)
    assert.match(stdout, refused)
  })

  test("the console's HA view shows why the peer is unreachable, by keyboard, light and dark, laptop and phone", async () => {
    assert.ok(replicaStopped, 'runs after the replica was stopped')
    const refused =
      /^the peer's knotd: 127\.0\.0\.1:\d+ refused the query: nothing listens there \(the server is not running\)$/
    browser = await launchChromium()
    const page = await signedInPage(browser, h)
    // Keyboard only: Tab along the navigation to the HA link, Enter.
    const link = page.getByRole('link', { name: 'HA' })
    for (let i = 0; i < 30 && !(await link.evaluate((a) => a === document.activeElement)); i++)
      await page.keyboard.press('Tab')
    assert.equal(await link.evaluate((a) => a === document.activeElement), true, 'Tab reaches the HA link')
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'HA status', exact: true }).waitFor()

    const self = page.getByRole('region', { name: 'This node' })
    const replication = self.locator('.kv', { has: page.locator('dt', { hasText: 'Replication' }) })
    await replication.getByText('peer unreachable', { exact: true }).waitFor()
    assert.match(await replication.locator('dd').innerText(), /0\/2 zones in sync/)
    const reason = replication.locator('dd div.bad')
    assert.match((await reason.innerText()).trim(), refused)
    // Shown as text, not markup: the reason is the element's only content.
    assert.equal(await reason.evaluate((el) => el.children.length), 0)
    const peerCard = page.getByRole('region', { name: 'Peer' })
    await peerCard
      .getByText(`the peer's dnsctl: 127.0.0.1:${peerApi} refused the connection: nothing listens there`, {
        exact: false,
      })
      .waitFor()
    assert.match(await self.locator('table.replication').innerText(), new RegExp(`${ZONE}\\s+10\\s+—\\s+no\\s`))

    const problems: string[] = []
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme })
      for (const [viewport, suffix] of [
        [{ width: 1280, height: 800 }, ''],
        [{ width: 390, height: 844 }, '-phone'],
      ] as const) {
        await page.setViewportSize(viewport)
        await reason.waitFor()
        for (const p of await lowContrast(page)) problems.push(`${scheme} ${viewport.width}px: ${p}`)
        // The long reason wraps inside its card instead of pushing the page sideways.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
        if (overflow > 0)
          problems.push(`${scheme} ${viewport.width}px: the page is ${overflow}px wider than the screen`)
        const inside = await reason.evaluate((el) => {
          const card = el.closest('section')?.getBoundingClientRect()
          const box = el.getBoundingClientRect()
          return card !== undefined && box.right <= card.right + 0.5
        })
        if (!inside) problems.push(`${scheme} ${viewport.width}px: the reason runs out of its card`)
        await screenshot(page, `ha-peer-down${scheme === 'dark' ? '-dark' : ''}${suffix}`)
      }
    }
    assert.deepEqual(problems, [])
    assert.deepEqual(pageProblems(page), [])
  })
})
