import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { after, test } from 'node:test'
import { launchChromium } from '../src/index.ts'

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
