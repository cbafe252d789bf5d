/** Blocklist source parsers, name normalisation and the compile rules (fast-check for the parsers). */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { domainToASCII } from 'node:url'
import fc from 'fast-check'
import { compileBlocklist } from '../src/blocklists/compile.ts'
import { hashBytes, NameSet } from '../src/blocklists/name-set.ts'
import { normaliseName } from '../src/blocklists/names.ts'
import { parseList, parseListAsText } from '../src/blocklists/parse.ts'
import { checkBody, SourceError } from '../src/blocklists/sources.ts'

const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?$/)
const domain = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 4 }), fc.stringMatching(/^[a-z]{2,6}$/))
  .map(([labels, tld]) => [...labels, tld].join('.'))
const VALID = /^(?:(?!-)[a-z0-9_-]{1,63}(?<!-)\.)+(?!-)[a-z0-9_-]{1,63}(?<!-)$/

describe('normaliseName', () => {
  test('lower case, trailing dot, IDNA', () => {
    assert.equal(normaliseName('Ads.Example.COM.'), 'ads.example.com')
    assert.equal(normaliseName('bücher.example'), 'xn--bcher-kva.example')
    assert.equal(normaliseName('_dmarc.example'), '_dmarc.example')
  })
  test('refuses what is not a domain', () => {
    for (const bad of [
      '',
      '.',
      'localhost',
      '1.2.3.4',
      '-a.example',
      'a-.example',
      'a..example',
      'a b.example',
      'a/b.example',
      `${'a'.repeat(64)}.example`,
      `${'a.'.repeat(127)}example`,
      'ex\u0000ample.com',
    ]) {
      assert.equal(normaliseName(bad), undefined, JSON.stringify(bad))
    }
  })
  test('property: never throws; any result is a valid lower-case name of at most 253 octets', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (s) => {
        const name = normaliseName(s)
        if (name !== undefined) {
          assert.match(name, VALID)
          assert.ok(name.length <= 253)
          assert.equal(normaliseName(name), name)
        }
      }),
      { numRuns: 2000 },
    )
  })
})

/** normaliseName written the plain way (regular expressions only), to compare the fast path with. */
function referenceNormalise(raw: string): string | undefined {
  let name = raw.endsWith('.') ? raw.slice(0, -1) : raw
  if (name.length === 0 || name.length > 253) return undefined
  if (/^[\x21-\x7e]+$/.test(name)) name = name.toLowerCase()
  else {
    if (/[^\x80-\u{10ffff}a-zA-Z0-9._-]/u.test(name)) return undefined
    name = domainToASCII(name)
    if (name === '') return undefined
  }
  if (name.length > 253 || !VALID.test(name) || /\.[0-9]+$/.test(name)) return undefined
  return name
}

test('property: the one-pass name check answers exactly as the regular expressions do', () => {
  const near = fc.string({
    unit: fc.constantFrom('a', 'Z', '0', '9', '-', '_', '.', '.', 'x', '*', ' ', 'ü'),
    maxLength: 80,
  })
  const long = fc
    .tuple(fc.integer({ min: 60, max: 66 }), fc.integer({ min: 1, max: 5 }))
    .map(([n, k]) => Array.from({ length: k }, () => 'a'.repeat(n)).join('.'))
  fc.assert(
    fc.property(fc.oneof(near, long, fc.string({ unit: 'binary', maxLength: 300 })), (raw) => {
      assert.equal(normaliseName(raw), referenceNormalise(raw), JSON.stringify(raw))
    }),
    { numRuns: 5000 },
  )
})

describe('parseList', () => {
  test('hosts, plain and adblock lines in one list', () => {
    const parsed = parseList(
      [
        '# comment',
        '! adblock comment',
        '[Adblock Plus 2.0]',
        '127.0.0.1 localhost',
        '0.0.0.0 a.example b.example # trailing',
        '::1 ip6-localhost',
        'C.Example.',
        '*.d.example',
        '||e.example^',
        '||f.example^|',
        '@@||g.example^',
        '||h.example/path',
        '||i.example^$third-party',
        'example.org##.banner',
        '/ads/*',
        'not a domain!',
        '999.example.1',
        'a.example',
        '',
      ].join('\r\n'),
    )
    assert.deepEqual([...parsed.block], ['a.example', 'b.example', 'c.example', 'd.example', 'e.example', 'f.example'])
    assert.deepEqual([...parsed.allow], ['g.example'])
    assert.equal(parsed.unsupported, 4)
    assert.equal(parsed.invalid, 2)
    assert.deepEqual(parsed.invalidSamples, ['not a domain!', '999.example.1'])
  })

  test('property: never throws, every output name is valid, counts add up', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 2000 }), (text) => {
        const p = parseList(text)
        for (const n of [...p.block, ...p.allow]) assert.match(n, VALID)
        assert.equal(new Set(p.block).size, p.block.size)
        assert.ok(p.invalid + p.unsupported <= p.entries + p.invalid)
      }),
      { numRuns: 500 },
    )
  })

  test('property: a list written in any of the three formats parses back to the same set', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(domain, { minLength: 1, maxLength: 40 }),
        fc.constantFrom('hosts', 'plain', 'adblock'),
        (names, format) => {
          const line = (n: string) => (format === 'hosts' ? `0.0.0.0 ${n}` : format === 'plain' ? n : `||${n}^`)
          const parsed = parseList(`# header\n${names.map(line).join('\n')}\n`)
          assert.deepEqual(new Set(parsed.block), new Set(names))
          assert.equal(parsed.invalid, 0)
        },
      ),
    )
  })

  test('property: junk lines mixed into a list never add names and never throw', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(domain, { maxLength: 20 }),
        fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { maxLength: 20 }),
        (names, junk) => {
          const parsed = parseList([...names, ...junk].join('\n'))
          for (const n of names) assert.ok(parsed.block.hasString(n))
          for (const n of parsed.block) assert.match(n, VALID)
        },
      ),
    )
  })
})

test('property: the byte path parses exactly as the string path does', () => {
  // Lines built from the characters the rules turn on, so most are near-misses of valid entries.
  const piece = fc.constantFrom(
    'a',
    'Z',
    '0',
    '9',
    '-',
    '_',
    '.',
    '.',
    '*.',
    ' ',
    '\t',
    '#',
    '##',
    '!',
    '[',
    '|',
    '||',
    '@@||',
    '^',
    '^|',
    '/',
    '$',
    '0.0.0.0 ',
    '127.0.0.1 ',
    '::1 ',
    'localhost',
    '.localdomain',
    'ü',
    '\r',
    '\v',
    'x'.repeat(63),
  )
  const line = fc.array(piece, { maxLength: 12 }).map((p) => p.join(''))
  fc.assert(
    fc.property(fc.array(line, { maxLength: 30 }), (lines) => {
      const text = lines.join('\n')
      const got = parseList(Buffer.from(text))
      const want = parseListAsText(text)
      assert.deepEqual([...got.block], [...want.block], JSON.stringify(text))
      assert.deepEqual([...got.allow], [...want.allow])
      assert.deepEqual(
        [got.entries, got.invalid, got.unsupported, got.invalidSamples],
        [want.entries, want.invalid, want.unsupported, want.invalidSamples],
        JSON.stringify(text),
      )
    }),
    { numRuns: 3000 },
  )
})

describe('checkBody', () => {
  test('refuses HTML, binary, empty and mostly-invalid bodies with a clear reason', () => {
    const refuse = (body: string | Buffer, type: string | undefined, why: RegExp) =>
      assert.throws(
        () => checkBody(Buffer.from(body), type),
        (e: Error) => e instanceof SourceError && why.test(e.message),
      )
    refuse('a.example\n', 'text/html; charset=utf-8', /serves HTML \(content-type text\/html\)/)
    refuse('  <!DOCTYPE html>\na.example', 'text/plain', /HTML or XML page/)
    refuse(Buffer.from([0x61, 0x2e, 0x65, 0x0a, 0x00, 0x01]), undefined, /NUL bytes/)
    refuse(Buffer.from([0x61, 0x2e, 0xff, 0xfe]), undefined, /not UTF-8/)
    refuse('# only comments\n', undefined, /holds no domain names/)
    refuse('not valid!\n', undefined, /holds no valid domain names \(1 invalid/)
    refuse(`a.example\n${'bad name\n'.repeat(20)}`, undefined, /20 of 21 entries are not valid/)
    assert.deepEqual(
      [...checkBody(Buffer.from(`a.example\n${'bad name\n'.repeat(5)}`), 'text/plain').parsed.block],
      ['a.example'],
    )
  })
})

describe('compileBlocklist', () => {
  const setOf = (names: string[]) => {
    const set = new NameSet()
    for (const n of names) set.addString(n)
    return set
  }
  const src = (block: string[], allow: string[] = []) => ({
    block: setOf(block),
    allow: setOf(allow),
    entries: 0,
    invalid: 0,
    invalidSamples: [],
    unsupported: 0,
  })
  test('de-duplicates across sources and drops names a blocked parent covers', () => {
    const out = compileBlocklist({
      sources: [src(['a.example', 'x.a.example', 'b.example']), src(['b.example', 'c.example'])],
      allow: [],
      deny: [],
    })
    assert.deepEqual(
      { ...out, blocked: [...out.blocked] },
      { blocked: ['a.example', 'b.example', 'c.example'], passthru: [] },
    )
  })
  test('allow exempts a name and its subdomains; under a blocked parent it becomes passthru; deny wins', () => {
    const out = compileBlocklist({
      sources: [
        src(
          ['parent.example', 'ok.parent.example', 'x.ok.parent.example', 'free.example', 'sub.free.example'],
          ['src-allowed.parent.example'],
        ),
      ],
      allow: ['ok.parent.example', 'free.example', 'both.example'],
      deny: ['denied.example', 'both.example', 'y.ok.parent.example'],
    })
    assert.deepEqual([...out.blocked].sort(), [
      'both.example',
      'denied.example',
      'parent.example',
      'y.ok.parent.example',
    ])
    assert.deepEqual(out.passthru.sort(), ['ok.parent.example', 'src-allowed.parent.example'])
  })

  test('property: the hashed ancestor walk answers exactly as slicing every ancestor does', () => {
    // Few labels, so names, ancestors, allows and denies overlap often.
    const name = fc
      .array(fc.constantFrom('a', 'b', 'c', 'x-y', '0'), { minLength: 2, maxLength: 5 })
      .map((labels) => labels.join('.'))
    const names = fc.array(name, { maxLength: 30 })
    fc.assert(
      fc.property(fc.array(fc.tuple(names, names), { maxLength: 3 }), names, names, (sources, allow, deny) => {
        const input = { sources: sources.map(([b, a]) => src([...new Set(b)], [...new Set(a)])), allow, deny }
        const got = compileBlocklist(input)
        const want = referenceCompile({
          ...input,
          sources: input.sources.map((s) => ({ block: [...s.block], allow: [...s.allow] })),
        })
        assert.deepEqual([...got.blocked], want.blocked)
        assert.deepEqual(got.passthru, want.passthru)
      }),
      { numRuns: 1000 },
    )
  })
})

/** The rules of compileBlocklist written the plain way (every ancestor sliced and looked up). */
function referenceCompile(input: { sources: { block: string[]; allow: string[] }[]; allow: string[]; deny: string[] }) {
  const ancestors = (n: string) =>
    n
      .split('.')
      .map((_, i, l) => l.slice(i + 1).join('.'))
      .filter((a) => a !== '')
  const deny = new Set(input.deny)
  const allow = new Set<string>()
  for (const n of [...input.allow, ...input.sources.flatMap((s) => s.allow)]) if (!deny.has(n)) allow.add(n)
  const set = new Set<string>()
  for (const s of input.sources)
    for (const n of s.block) if (!set.has(n) && !allow.has(n) && !ancestors(n).some((a) => allow.has(a))) set.add(n)
  for (const n of deny) set.add(n)
  const blocked = [...set].filter((n) => {
    for (const a of ancestors(n)) {
      if (allow.has(a)) return true
      if (set.has(a)) return false
    }
    return true
  })
  const passthru = [...allow].filter((n) => ancestors(n).some((a) => set.has(a)))
  return { blocked, passthru }
}

test('NameSet: through many growths every name is found once, in insertion order, upper case folded', () => {
  const set = new NameSet()
  const names = Array.from({ length: 20_000 }, (_, i) => `n${i}.${'x'.repeat(i % 200)}.example`)
  for (const n of names) assert.notEqual(set.addString(n), -1)
  for (const n of names) assert.equal(set.addString(n), -1, n)
  const upper = Buffer.from('N7.X.EXAMPLE')
  const folded = Buffer.from('n7.x.example')
  assert.notEqual(set.add(upper, 0, upper.length, hashBytes(folded, 0, folded.length), true), -1)
  assert.equal(set.addString('n7.x.example'), -1)
  assert.equal(set.size, names.length + 1)
  assert.deepEqual([...set], [...names, 'n7.x.example'])
  assert.equal(set.hasString('n1.x.example'), true)
  assert.equal(set.hasString('n1.xx.example'), false)
})
