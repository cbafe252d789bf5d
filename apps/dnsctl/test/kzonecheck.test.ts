import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { requireBinary, tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { parseZone, renderZone, validateZone, ZoneError } from '../src/zonefile/index.ts'
import { API_STRICTER, BOTH_ACCEPT, BOTH_REFUSE, HEAD, NEVER_TO_TOOLS } from './fixtures/corpus.ts'

const kzonecheck = requireBinary('/usr/bin/kzonecheck', 'knot-dnssecutils')
const dir = tempDir('dnsctl-kz-')
after(() => dir.remove())
let n = 0

/** kzonecheck's verdict on zone text (true: accepted). */
function knotAccepts(text: string): Promise<boolean> {
  // Zone text with $INCLUDE makes kzonecheck read files: it must never get any.
  assert.ok(!/\$include/i.test(text), 'zone text with $INCLUDE must not reach kzonecheck')
  const file = join(dir.path, `z${n++}.zone`)
  writeFileSync(file, text)
  return new Promise((resolve) => execFile(kzonecheck, ['-o', 'example.test', file], (err) => resolve(!err)))
}

function oursAccepts(text: string): { ok: true } | { ok: false; code: string } {
  try {
    validateZone(parseZone(text, { origin: 'example.test.' }))
    return { ok: true }
  } catch (err) {
    assert.ok(err instanceof ZoneError, String(err))
    return { ok: false, code: err.code }
  }
}

describe('agreement with kzonecheck', () => {
  test('zones both accept', async () => {
    const verdicts = await Promise.all(BOTH_ACCEPT.map((c) => knotAccepts(HEAD + c)))
    BOTH_ACCEPT.forEach((c, i) => {
      assert.equal(verdicts[i], true, `kzonecheck refuses ${JSON.stringify(c)}`)
      assert.deepEqual(oursAccepts(HEAD + c), { ok: true }, c)
    })
  })

  test('zones both refuse', async () => {
    const verdicts = await Promise.all(BOTH_REFUSE.map((c) => knotAccepts(HEAD + c)))
    BOTH_REFUSE.forEach((c, i) => {
      assert.equal(verdicts[i], false, `kzonecheck accepts ${JSON.stringify(c)}`)
      assert.equal(oursAccepts(HEAD + c).ok, false, c)
    })
  })

  test('zones kzonecheck accepts and the API refuses on purpose', async () => {
    const verdicts = await Promise.all(API_STRICTER.map(([c]) => knotAccepts(HEAD + c)))
    API_STRICTER.forEach(([c, code], i) => {
      assert.equal(verdicts[i], true, `kzonecheck now refuses ${JSON.stringify(c)}: move it to BOTH_REFUSE`)
      assert.deepEqual(oursAccepts(HEAD + c), { ok: false, code }, c)
    })
    for (const [c, code] of NEVER_TO_TOOLS) assert.deepEqual(oursAccepts(HEAD + c), { ok: false, code })
  })

  test('kzonecheck accepts every canonical rendering of a valid zone', async () => {
    const label = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,8}$/)
    const rec = fc.oneof(
      fc.tuple(label, fc.ipV4()).map(([o, ip]) => `${o} A ${ip}`),
      fc.tuple(label, fc.ipV6()).map(([o, ip]) => `${o} AAAA ${ip}`),
      fc.tuple(label, fc.string({ maxLength: 30 })).map(([o, s]) => `${o} TXT "${s.replace(/["\\]/g, '\\$&')}"`),
      fc.tuple(label, fc.nat(65535), label).map(([o, p, t]) => `${o} MX ${p} ${t}`),
    )
    const texts = fc.sample(fc.array(rec, { maxLength: 20 }), { numRuns: 30, seed: 42 }).map((lines) => {
      const text = `${HEAD}${lines.join('\n')}\n`
      try {
        const zone = parseZone(text, { origin: 'example.test.' })
        validateZone(zone)
        return renderZone(zone)
      } catch {
        return undefined // duplicates drawn at random: not a valid zone
      }
    })
    const valid = texts.filter((t): t is string => t !== undefined)
    assert.ok(valid.length >= 10)
    const verdicts = await Promise.all(valid.map(knotAccepts))
    for (const [i, t] of valid.entries()) assert.equal(verdicts[i], true, t)
  })
})
