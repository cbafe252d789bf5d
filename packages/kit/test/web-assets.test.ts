/** A web client's files: every known type under the folder (and below), an ETag, 304 on a match. */
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { createHttpApp, createLogger } from '../src/index.ts'
import { loadWebAssets, sendWebAsset } from '../src/web-assets.ts'

test('loadWebAssets reads every known type recursively; sendWebAsset answers 200 with an ETag, then 304', async () => {
  const dir = tempDir('kit-web-')
  after(() => dir.remove())
  mkdirSync(join(dir.path, 'views'))
  writeFileSync(join(dir.path, 'index.html'), '<!doctype html>')
  writeFileSync(join(dir.path, 'views', 'zones.js'), 'export {}')
  writeFileSync(join(dir.path, 'notes.txt'), 'not served')
  const assets = loadWebAssets(dir.path)
  assert.deepEqual([...assets.keys()].sort(), ['index.html', 'views/zones.js'])
  assert.equal(assets.get('views/zones.js')!.type, 'text/javascript; charset=utf-8')

  const app = await createHttpApp({ name: 'webtest', logger: createLogger({ name: 'webtest', level: 'silent' }) })
  after(() => app.close())
  app.get('/z.js', async (req, reply) => sendWebAsset(req, reply, assets.get('views/zones.js')!))
  const first = await app.inject({ url: '/z.js' })
  assert.equal(first.statusCode, 200)
  assert.equal(first.body, 'export {}')
  assert.equal(first.headers['x-content-type-options'], 'nosniff')
  assert.equal(first.headers['cache-control'], 'no-cache')
  const again = await app.inject({ url: '/z.js', headers: { 'if-none-match': String(first.headers.etag) } })
  assert.equal(again.statusCode, 304)
  assert.equal(again.body, '')
})
