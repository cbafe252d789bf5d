/**
 * Browser-test helpers for the artsvc UI: a real artsvc with the testkit OpenID provider
 * and Chromium, sign-in through the provider, a drag-and-drop of a file onto an element,
 * screenshots under apps/artsvc/test-output/, and an accessibility check that every
 * control has a name.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { crc32, deflateSync } from 'node:zlib'
import {
  type Browser,
  type BrowserContext,
  freePort,
  launchChromium,
  type OidcProvider,
  type Page,
  startOidcProvider,
} from '@gatehouse/testkit'
import { AUDIENCE, type Harness, SCOPE, startArtsvc } from './harness.ts'

export const OUTPUT = join(import.meta.dirname, '..', '..', 'test-output')

export interface UiRig {
  op: OidcProvider
  h: Harness
  browser: Browser
  close(): Promise<void>
}

export async function startUiRig(): Promise<UiRig> {
  const port = await freePort()
  const op = await startOidcProvider({
    redirectUris: [`http://127.0.0.1:${port}/api/v1/auth/oidc/callback`],
    audience: AUDIENCE,
    scopes: [SCOPE],
  })
  const h = await startArtsvc({ op, port })
  const browser = await launchChromium()
  mkdirSync(OUTPUT, { recursive: true })
  return {
    op,
    h,
    browser,
    async close() {
      await browser.close()
      await h.close()
      await op.stop()
    },
  }
}

/** A fresh browser context signed in as `sub` through the provider, on the library page. */
export async function signIn(rig: UiRig, sub: string, name?: string): Promise<{ context: BrowserContext; page: Page }> {
  rig.op.loginAs(sub, name ? { name } : undefined)
  const context = await rig.browser.newContext({ viewport: { width: 1280, height: 860 } })
  const page = await context.newPage()
  await page.goto(`${rig.h.base}/`)
  await page.getByRole('link', { name: 'Sign in' }).click()
  await page.waitForURL(`${rig.h.base}/`)
  await page.getByRole('heading', { name: 'Library' }).waitFor()
  return { context, page }
}

/** Drop a file on an element the way a browser does: dragenter/dragover/drop with a DataTransfer. */
export async function dropFile(page: Page, selector: string, fileName: string, bytes: Buffer, type: string) {
  const transfer = await page.evaluateHandle(
    ({ base64, fileName, type }) => {
      const dt = new DataTransfer()
      dt.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], fileName, { type }))
      return dt
    },
    { base64: bytes.toString('base64'), fileName, type },
  )
  for (const event of ['dragenter', 'dragover', 'drop'])
    await page.dispatchEvent(selector, event, { dataTransfer: transfer })
}

/**
 * Drop files or folders from disk the way the operating system does, through Chromium's
 * input pipeline (DevTools `Input.dispatchDragEvent`): a folder arrives as a directory
 * entry, which a synthetic DataTransfer cannot carry.
 */
export async function dropFromDisk(page: Page, selector: string, paths: string[]) {
  const box = (await page.locator(selector).boundingBox())!
  const cdp = await page.context().newCDPSession(page)
  const at = { x: box.x + box.width / 2, y: box.y + box.height / 2 }
  const data = { items: [], files: paths, dragOperationsMask: 1 }
  for (const type of ['dragEnter', 'dragOver', 'drop'] as const) {
    await cdp.send('Input.dispatchDragEvent', { type, ...at, data })
  }
  await cdp.detach()
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(OUTPUT, `${name}.png`), fullPage: true })
}

/** Descriptions of visible controls without an accessible name (empty when all are labelled). */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const missing: string[] = []
    for (const el of document.querySelectorAll<HTMLElement>('input, select, textarea, button, a[href]')) {
      if (el.closest('[hidden]') || (el as HTMLInputElement).type === 'hidden') continue
      const labels = (el as HTMLInputElement).labels
      const named =
        (labels && labels.length > 0 && [...labels].some((l) => l.textContent!.trim() !== '')) ||
        el.getAttribute('aria-label')?.trim() ||
        (el.getAttribute('aria-labelledby') &&
          document.getElementById(el.getAttribute('aria-labelledby')!)?.textContent?.trim()) ||
        ((el.tagName === 'BUTTON' || el.tagName === 'A') && el.textContent!.trim())
      if (!named) missing.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className}`)
    }
    return missing
  })
}

/** A real PNG of one colour (for logo and favicon uploads that Chromium can draw). */
export function solidPng(size: number, rgb: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const out = Buffer.alloc(12 + data.length)
    out.writeUInt32BE(data.length, 0)
    body.copy(out, 4)
    out.writeUInt32BE(crc32(body), 8 + data.length)
    return out
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header[8] = 8 // bit depth
  header[9] = 2 // truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => rgb).flat())])
  const pixels = deflateSync(Buffer.concat(Array.from({ length: size }, () => row)))
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ])
}
