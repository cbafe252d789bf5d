/**
 * The hostile ZIP corpus, built byte by byte (test/helpers/zip-builder.ts), against the
 * bundle validator; plus fast-check: random and mutated archives never crash or hang, they
 * are accepted or refused with a BundleError.
 */
import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { BundleError, type BundleReason, extractBundle } from '../src/bundles/zip.ts'
import { buildZip, sampleBundle, type ZipEntryInput } from './helpers/zip-builder.ts'

const dir = tempDir('artsvc-zip-')
after(() => dir.remove())
let n = 0
const limits = { maxBytes: 1024 * 1024, maxFiles: 20 }

async function run(zip: Buffer, entrypoint = 'index.html', l = limits) {
  const id = ++n
  const file = join(dir.path, `z${id}.zip`)
  writeFileSync(file, zip)
  const work = join(dir.path, `w${id}`)
  mkdirSync(work)
  try {
    return await extractBundle(file, entrypoint, l, work)
  } finally {
    // Nothing may be left behind on refusal.
  }
}

async function refused(zip: Buffer, reason: BundleReason, entrypoint = 'index.html', l = limits) {
  const id = n + 1
  await assert.rejects(run(zip, entrypoint, l), (err: unknown) => {
    assert.ok(err instanceof BundleError, `expected BundleError, got ${err}`)
    assert.equal(err.reason, reason, err.message)
    return true
  })
  assert.deepEqual(readdirSync(join(dir.path, `w${id}`)), [], 'temp files removed after refusal')
}

const index = { name: 'index.html', data: '<!doctype html><p>hi</p>' }

describe('valid bundles', () => {
  test('are extracted with sizes, hashes and content types', async () => {
    const bundle = await run(
      sampleBundle([{ name: 'lib/mod.wasm', data: Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]), method: 0 }]),
    )
    const byPath = new Map(bundle.files.map((f) => [f.path, f]))
    assert.deepEqual([...byPath.keys()].sort(), ['app.js', 'css/site.css', 'index.html', 'lib/mod.wasm'])
    assert.equal(byPath.get('lib/mod.wasm')!.contentType, 'application/wasm')
    assert.equal(byPath.get('app.js')!.contentType, 'text/javascript; charset=utf-8')
    assert.equal(byPath.get('lib/mod.wasm')!.size, 8)
    assert.match(byPath.get('index.html')!.sha256, /^[0-9a-f]{64}$/)
    await bundle.discard()
  })

  test('zip64 archives and unicode names are accepted', async () => {
    const bundle = await run(buildZip([index, { name: 'données/été.txt', data: 'ok' }], { zip64: true }))
    assert.deepEqual(bundle.files.map((f) => f.path).sort(), ['données/été.txt', 'index.html'])
  })

  test('decomposed unicode names are stored in NFC form', async () => {
    const bundle = await run(buildZip([index, { name: 'cafe\u0301.txt', data: 'x' }]))
    assert.ok(bundle.files.some((f) => f.path === 'caf\u00e9.txt'))
  })
})

describe('hostile corpus', () => {
  const cases: [string, ZipEntryInput[], BundleReason][] = [
    ['dot-dot traversal', [index, { name: '../evil.html', data: 'x' }], 'path_traversal'],
    ['nested traversal', [index, { name: 'a/../../evil', data: 'x' }], 'path_traversal'],
    ['absolute path', [index, { name: '/etc/passwd', data: 'x' }], 'absolute_path'],
    ['drive letter', [index, { name: 'C:/windows/x', data: 'x' }], 'absolute_path'],
    ['backslash', [index, { name: 'a\\..\\b', data: 'x' }], 'invalid_name'],
    ['control character', [index, { name: 'a\u0001b', data: 'x' }], 'invalid_name'],
    ['NUL in name', [index, { name: 'a\u0000.html', data: 'x' }], 'invalid_name'],
    ['empty segment', [index, { name: 'a//b', data: 'x' }], 'invalid_name'],
    ['dot segment', [index, { name: './a', data: 'x' }], 'invalid_name'],
    ['symlink', [index, { name: 'link', data: '/etc/passwd', mode: 0o120777 }], 'symlink'],
    ['fifo', [index, { name: 'pipe', data: '', mode: 0o010644 }], 'special_file'],
    ['duplicate', [index, { name: 'a.txt', data: '1' }, { name: 'a.txt', data: '2' }], 'duplicate_path'],
    ['case variant', [index, { name: 'Index.html', data: 'x' }], 'duplicate_path'],
    ['unicode variant', [index, { name: 'caf\u00e9', data: '1' }, { name: 'cafe\u0301', data: '2' }], 'duplicate_path'],
    ['file and directory clash', [index, { name: 'a', data: '1' }, { name: 'a/b', data: '2' }], 'duplicate_path'],
    ['encrypted flag', [index, { name: 'secret', data: 'x', flags: 1 }], 'encrypted'],
    ['unknown compression', [index, { name: 'x.bin', data: 'x', method: 12 }], 'unsupported_compression'],
    ['crc mismatch', [index, { name: 'x.txt', data: 'hello', crc: 12345 }], 'crc_mismatch'],
    [
      'header claims fewer bytes',
      [index, { name: 'x.txt', data: 'hello world', uncompressedSize: 3 }],
      'size_mismatch',
    ],
    ['header claims more bytes', [index, { name: 'x.txt', data: 'hi', uncompressedSize: 500 }], 'size_mismatch'],
    [
      'local name differs from central',
      [index, { name: 'safe.txt', localName: '../evil', data: 'x' }],
      'header_mismatch',
    ],
    [
      'local header states another CRC',
      [index, { name: 'x.txt', data: 'hello', local: { crc: 1 } }],
      'header_mismatch',
    ],
    [
      'local header states another uncompressed size',
      [index, { name: 'x.txt', data: 'hello world', local: { uncompressedSize: 3 } }],
      'header_mismatch',
    ],
    [
      'local header states another compressed size',
      [index, { name: 'x.txt', data: 'hello world', local: { compressedSize: 2 } }],
      'header_mismatch',
    ],
    [
      'overlapping entries sharing one local header',
      [index, { name: 'a.txt', data: 'x'.repeat(1000) }, { name: 'b.txt', data: 'x'.repeat(1000), shareLocalWith: 1 }],
      'header_mismatch',
    ],
    [
      "an entry whose bytes lie inside another's (overlap with consistent headers)",
      [index, { name: 'outer.bin', containsNext: true }, { name: 'inner.txt', data: 'y'.repeat(1000) }],
      'overlapping_entries',
    ],
    ['missing entrypoint', [{ name: 'other.html', data: 'x' }], 'missing_entrypoint'],
    ['no files', [{ name: 'dir/', data: '' }], 'empty_bundle'],
    ['invalid UTF-8 name', [index, { name: Buffer.from([0x61, 0xff, 0xfe]), data: 'x' }], 'invalid_encoding'],
  ]
  for (const [name, entries, reason] of cases) {
    test(`refuses ${name} (${reason})`, () => refused(buildZip(entries), reason))
  }

  test('refuses too many files', async () => {
    const many = Array.from({ length: 21 }, (_, i) => ({ name: `f${i}.txt`, data: String(i) }))
    await refused(buildZip([index, ...many]), 'too_many_files')
  })

  test('refuses an expansion bomb whose headers tell the truth', async () => {
    await refused(buildZip([index, { name: 'bomb.txt', data: Buffer.alloc(2 * 1024 * 1024) }]), 'too_large')
  })

  test('refuses an expansion bomb whose headers lie (bytes are counted while inflating)', async () => {
    const zip = buildZip([index, { name: 'bomb.txt', data: Buffer.alloc(3 * 1024 * 1024), uncompressedSize: 100 }])
    await assert.rejects(
      run(zip),
      (err: unknown) => err instanceof BundleError && ['size_mismatch', 'too_large'].includes(err.reason),
    )
  })

  test('refuses a total over the limit spread across files', async () => {
    const files = Array.from({ length: 5 }, (_, i) => ({ name: `p${i}.bin`, data: Buffer.alloc(300 * 1024, i) }))
    await refused(buildZip([index, ...files]), 'too_large')
  })

  test('refuses a zip64 local header whose sizes disagree with the central directory', async () => {
    await refused(
      buildZip([index, { name: 'x.txt', data: 'abcdef', local: { uncompressedSize: 7 } }], { zip64: true }),
      'header_mismatch',
    )
  })

  test('accepts a data descriptor entry whose local CRC and sizes are zero (bit 3)', async () => {
    const entry = {
      name: 'x.txt',
      data: 'streamed',
      flags: (1 << 11) | 0x08,
      local: { crc: 0, compressedSize: 0, uncompressedSize: 0 },
    }
    const bundle = await run(buildZip([index, entry]))
    assert.deepEqual(bundle.files.map((f) => f.path).sort(), ['index.html', 'x.txt'])
    await refused(
      buildZip([index, { ...entry, local: { crc: 0, compressedSize: 0, uncompressedSize: 99 } }]),
      'header_mismatch',
    )
  })

  test('refuses a lying zip64 size', async () => {
    await refused(
      buildZip([index, { name: 'x.txt', data: 'abcdef', uncompressedSize: 2 }], { zip64: true }),
      'size_mismatch',
    )
  })

  test('refuses truncated and garbage archives', async () => {
    const good = sampleBundle()
    await refused(good.subarray(0, good.length - 30), 'zip_corrupt')
    await refused(Buffer.from('not a zip at all'), 'zip_corrupt')
    await refused(Buffer.alloc(0), 'zip_corrupt')
  })
})

describe('fuzz', () => {
  test('random bytes never crash: refused with a BundleError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 600 }), async (bytes) => {
        await assert.rejects(run(Buffer.from(bytes)), BundleError)
      }),
      { numRuns: 150 },
    )
  })

  test('mutated valid archives are accepted intact or refused with a BundleError', async () => {
    const good = sampleBundle()
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(good.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
        fc.option(fc.nat(good.length), { nil: undefined }),
        async (flips, cut) => {
          const bytes = Buffer.from(good)
          for (const [at, value] of flips) bytes[at] = value
          const input = cut === undefined ? bytes : bytes.subarray(0, cut)
          try {
            const bundle = await run(input)
            // Accepted only if every file still verifies (CRC and size are checked inside).
            assert.ok(bundle.files.length > 0)
            await bundle.discard()
          } catch (err) {
            assert.ok(err instanceof BundleError, `unexpected ${(err as Error)?.stack}`)
          }
        },
      ),
      { numRuns: 200 },
    )
  })

  test('arbitrary entry names are accepted only when safe', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), async (name) => {
        try {
          const bundle = await run(buildZip([index, { name, data: 'x' }]))
          for (const f of bundle.files) {
            assert.ok(!f.path.split('/').includes('..'))
            assert.ok(!f.path.startsWith('/'))
          }
          await bundle.discard()
        } catch (err) {
          assert.ok(err instanceof BundleError)
        }
      }),
      { numRuns: 200 },
    )
  })
})
