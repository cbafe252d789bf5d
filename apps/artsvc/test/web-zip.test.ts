/**
 * The browser UI's ZIP helpers (web/zip.js) run here in Node, where Blob, DataView and
 * TextDecoder are the same web APIs: a folder the browser packs is accepted by the server's
 * real bundle validator with every name and byte intact, and the entrypoint lister never
 * throws or hangs on arbitrary bytes (it only suggests; the server decides).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { extractBundle } from '../src/bundles/zip.ts'
// @ts-expect-error: a browser module in plain JavaScript, without type declarations
import { buildZip, zipFileNames } from '../web/zip.js'
import { buildZip as buildTestZip, sampleBundle } from './helpers/zip-builder.ts'

const dir = tempDir('artsvc-web-zip-')
after(() => dir.remove())
let n = 0

const segment = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,11}$/).filter((s) => s !== '.' && s !== '..')
const files = fc.uniqueArray(
  fc.record({
    path: fc.array(segment, { minLength: 1, maxLength: 3 }).map((p) => p.join('/')),
    data: fc.uint8Array({ maxLength: 2000 }),
  }),
  { minLength: 1, maxLength: 12, selector: (f) => f.path.toLowerCase() },
)

test('a folder zipped in the browser passes the server validator with names and bytes intact', async () => {
  await fc.assert(
    fc.asyncProperty(files, async (input) => {
      // A name may not be both a file and a folder (the server refuses that as a duplicate).
      const paths = input.map((f) => f.path.toLowerCase())
      fc.pre(!paths.some((p) => paths.some((q) => q.startsWith(`${p}/`))))
      const zip = Buffer.from(await (buildZip(input) as Blob).arrayBuffer())
      assert.deepEqual(
        zipFileNames(zip.buffer.slice(zip.byteOffset, zip.byteOffset + zip.length)),
        input.map((f) => f.path),
      )
      const file = join(dir.path, `b${++n}.zip`)
      writeFileSync(file, zip)
      const work = join(dir.path, `w${n}`)
      mkdirSync(work)
      const bundle = await extractBundle(file, input[0]!.path, { maxBytes: 1024 * 1024, maxFiles: 50 }, work)
      try {
        const byPath = new Map(bundle.files.map((f) => [f.path, f]))
        for (const f of input) {
          const got = byPath.get(f.path)
          assert.ok(got, `${f.path} extracted`)
          assert.equal(got.sha256, createHash('sha256').update(f.data).digest('hex'))
          assert.deepEqual(readFileSync(got.tempPath), Buffer.from(f.data))
        }
      } finally {
        await bundle.discard()
      }
    }),
    { numRuns: 60 },
  )
})

test('the entrypoint lister reads real archives and never throws on arbitrary or cut bytes', () => {
  const sample = sampleBundle()
  const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length)
  assert.ok(zipFileNames(ab(sample)).includes('index.html'))
  const nested = buildTestZip([
    { name: 'site/', data: '' },
    { name: 'site/a.html', data: 'a' },
  ])
  assert.deepEqual(zipFileNames(ab(nested)), ['site/a.html'], 'folder entries are not offered')
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), fc.nat(), (bytes, cut) => {
      const names = zipFileNames(ab(Buffer.from(bytes)))
      assert.ok(Array.isArray(names))
      const truncated = sample.subarray(0, cut % (sample.length + 1))
      assert.ok(Array.isArray(zipFileNames(ab(Buffer.from(truncated)))))
    }),
    { numRuns: 500 },
  )
})
