import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { after, test } from 'node:test'
import { launchChromium, unreadableText } from '../src/index.ts'

test('launchChromium renders a loopback page and runs its script', async () => {
  const srv = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html')
    res.end('<title>t</title><button id=b onclick="this.textContent=\'clicked\'">go</button>')
  })
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  after(() => srv.close())
  const browser = await launchChromium()
  after(() => browser.close())
  const page = await browser.newPage()
  await page.goto(`http://127.0.0.1:${(srv.address() as { port: number }).port}/`)
  await page.click('#b')
  assert.equal(await page.textContent('#b'), 'clicked')
  await browser.close()
  assert.equal(browser.isConnected(), false)
})

test('unreadableText names faint text, in light and dark, and exempts disabled controls and screen-reader text', async () => {
  const browser = await launchChromium()
  after(() => browser.close())
  const page = await browser.newPage()
  await page.setContent(`<style>:root { color-scheme: light dark } .sr { position: absolute; left: -9999px }</style>
    <p id=ok style="color:#222">readable</p>
    <p id=faint style="color:#aaa">faint on white</p>
    <p style="background:rgba(0,0,0,0.5)"><span id=blended style="color:#333">dark on a dimmed layer</span></p>
    <button disabled style="color:#ccc">disabled</button>
    <span class=sr style="color:#eee">for screen readers</span>
    <h1 id=large style="color:#949494;font-size:24px">large, 3:1 is enough</h1>`)
  const light = await unreadableText(page)
  assert.deepEqual(
    light.map((l) => l.split(' ')[0]),
    ['p#faint', 'span#blended'],
  )
  assert.match(light[0]!, /^p#faint "faint on white": 2\.\d\d:1 \(rgb\(170, 170, 170\) on rgb\(255, 255, 255\)\)$/)
  // Dark: the canvas is Chromium's dark one, so dark text becomes the faint one.
  await page.emulateMedia({ colorScheme: 'dark' })
  const dark = (await unreadableText(page)).map((l) => l.split(' ')[0])
  assert.ok(dark.includes('p#ok'), dark.join('\n'))
  assert.ok(!dark.includes('p#faint'), dark.join('\n'))
})

test('unreadableText reads colours Chromium keeps outside rgb(): color-mix() and oklch()', async () => {
  const browser = await launchChromium()
  after(() => browser.close())
  const page = await browser.newPage()
  // color-mix() computes to `color(srgb r g b)` with 0–1 channels: read as 0–255 it was near
  // black, so light text on a mixed dark panel was a false alarm and faint mixed text passed.
  await page.setContent(`<div style="background:color-mix(in srgb, #000 90%, #fff)">
      <p id=light-on-mixed style="color:#eee">light on a mixed dark panel</p></div>
    <p id=faint-mixed style="color:color-mix(in srgb, #fff 70%, #000)">faint mixed grey on white</p>
    <p id=oklch-dark style="color:oklch(0.25 0 0)">dark oklch on white</p>
    <p id=oklch-faint style="color:oklch(0.85 0 0)">faint oklch on white</p>`)
  const problems = (await unreadableText(page)).map((l) => l.split(' ')[0])
  assert.deepEqual(problems, ['p#faint-mixed', 'p#oklch-faint'])
})
