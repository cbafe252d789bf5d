import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  compareNames,
  NameError,
  parseZone,
  renderZone,
  resolveName,
  validateZone,
  type Zone,
  ZoneError,
} from '../src/zonefile/index.ts'

const ORIGIN = 'example.test.'

function parse(text: string): Zone {
  return parseZone(text, { origin: ORIGIN })
}

function refuse(text: string, code: string, pattern?: RegExp) {
  assert.throws(
    () => validateZone(parse(text)),
    (err: unknown) => {
      assert.ok(err instanceof ZoneError, `expected ZoneError, got ${err}`)
      assert.equal(err.code, code, err.message)
      if (pattern) assert.match(err.message, pattern)
      return true
    },
  )
}

const HEAD = '$TTL 300\n@ SOA ns1 hostmaster 1 3600 900 604800 300\n@ NS ns1\nns1 A 192.0.2.1\n'

describe('zone text parser', () => {
  test('RFC 1035 syntax: $ORIGIN, $TTL, parentheses, comments, blank owners, @ and relative names in RDATA', () => {
    const zone = parse(`$ORIGIN example.test.
$TTL 1h ; default TTL
@   IN  SOA ns1 hostmaster.example.test. (
        2024010101 ; serial
        1h 15m 1w 5M )
    IN  NS  ns1
    IN  NS  ns2.example.net.
    IN  MX  10 @
ns1 A 192.0.2.1
WWW 300 in a 192.0.2.2
    AAAA 2001:DB8:0:0::1
$ORIGIN sub.example.test.
host CNAME www.example.test.
_sip._tcp SRV 0 5 5060 host
txt TXT "say \\"hi\\"" plain "semi;colon" caf\\195\\169
@ CAA 0 ISSUE "letsencrypt.org"
`)
    validateZone(zone)
    assert.equal(
      renderZone(zone),
      `$ORIGIN example.test.
@ 3600 IN SOA ns1.example.test. hostmaster.example.test. 2024010101 3600 900 604800 300
@ 3600 IN NS ns1.example.test.
@ 3600 IN NS ns2.example.net.
@ 3600 IN MX 10 example.test.
ns1 3600 IN A 192.0.2.1
sub 3600 IN CAA 0 issue "letsencrypt.org"
_sip._tcp.sub 3600 IN SRV 0 5 5060 host.sub.example.test.
host.sub 3600 IN CNAME www.example.test.
txt.sub 3600 IN TXT "say \\"hi\\"" "plain" "semi;colon" "caf\\195\\169"
www 300 IN A 192.0.2.2
www 3600 IN AAAA 2001:db8::1
`,
    )
  })

  test('CRLF line endings and a leading byte-order mark read the same as plain text', () => {
    const plain = `${HEAD}www TXT "a" ( "b"\n  "c" ) ; note\n`
    assert.deepEqual(parse(`\ufeff${plain.replaceAll('\n', '\r\n')}`), parse(plain))
  })

  test('without $TTL an omitted TTL is the last explicit one (RFC 1035 §5.1)', () => {
    const zone = parse('@ 600 SOA ns1 h 1 1 1 1 1\n@ NS ns1\nns1 A 192.0.2.1\n')
    assert.deepEqual(
      zone.records.map((r) => r.ttl),
      [600, 600, 600],
    )
    assert.throws(() => parse('@ SOA ns1 h 1 1 1 1 1\n'), /no TTL/)
  })

  test('$INCLUDE and other directives are refused, never read', () => {
    refuse(`${HEAD}$INCLUDE /etc/passwd\n`, 'include_refused', /line 5: \$INCLUDE is refused/)
    refuse(`${HEAD}$include other.zone example.test.\n`, 'include_refused')
    refuse(`${HEAD}$GENERATE 1-10 host$ A 192.0.2.$\n`, 'invalid_zone_text', /unsupported directive/)
  })

  test('only class IN', () => {
    refuse(`${HEAD}www CH A 192.0.2.1\n`, 'non_internet_class', /class CH/)
    refuse(`${HEAD}www 300 HS A 192.0.2.1\n`, 'non_internet_class')
    refuse(`${HEAD}www CLASS3 A 192.0.2.1\n`, 'non_internet_class')
  })

  test('record types outside the managed set are named', () => {
    refuse(`${HEAD}www PTR host\n`, 'unsupported_type', /PTR is not supported/)
    refuse(`${HEAD}www TYPE99 \\# 0\n`, 'unsupported_type')
    refuse(`${HEAD}www BOGUS 1\n`, 'invalid_record', /unknown record type/)
  })

  test('TTL limits (RFC 2181: 0..2^31-1)', () => {
    assert.equal(parse(`${HEAD}www 2147483647 A 192.0.2.1\n`).records.at(-1)!.ttl, 2147483647)
    refuse(`${HEAD}www 2147483648 A 192.0.2.1\n`, 'invalid_ttl', /maximum/)
    refuse(`$TTL 99999999999\n${HEAD}`, 'invalid_ttl')
    refuse(`${HEAD}www 1x A 192.0.2.1\n`, 'invalid_ttl')
  })

  test('RDATA validation per type', () => {
    const bad: [string, RegExp][] = [
      ['www A 192.0.2.256', /invalid IPv4/],
      ['www A 192.0.2', /invalid IPv4/],
      ['www A 010.0.0.1', /invalid IPv4/],
      ['www A 192.0.2.1 192.0.2.2', /expected an IPv4 address/],
      ['www AAAA 192.0.2.1', /invalid IPv6/],
      ['www AAAA fe80::1%eth0', /invalid IPv6/],
      ['www AAAA 2001:db8::1::2', /invalid IPv6/],
      ['www MX 65536 mail', /at most 65535/],
      ['www MX mail', /preference and exchange/],
      ['www SRV 0 0 70000 host', /port must be at most 65535/],
      ['www CNAME a..b', /empty label/],
      ['www CNAME "quoted"', /must not be quoted/],
      ['www NS bad!name', /invalid character/],
      ['www TXT', /at least one character-string/],
      [`www TXT "${'x'.repeat(256)}"`, /256 octets; the limit is 255/],
      [
        `www TXT ${Array(258)
          .fill(`"${'x'.repeat(254)}"`)
          .join(' ')}`,
        /258 strings make 65790 octets of RDATA; the limit is 65535/,
      ],
      ['www TXT "\\256"', /not an octet/],
      ['www TXT "\\12"', /three digits/],
      ['www CAA 0 is-sue "x"', /tag must be/],
      ['www CAA 256 issue "x"', /flags must be at most 255/],
      ['www.a\\.b A 192.0.2.1', /escapes are not supported/],
      ['a.*.b A 192.0.2.1', /wildcard/],
      [`${'a'.repeat(64)} A 192.0.2.1`, /longer than 63/],
    ]
    for (const [line, pattern] of bad) {
      assert.throws(
        () => parse(`${HEAD}${line}\n`),
        (err: unknown) => err instanceof ZoneError && pattern.test(err.message) && /^line 5: /.test(err.message),
        line,
      )
    }
  })

  test('lexer errors carry the line', () => {
    assert.throws(() => parse(`${HEAD}www TXT "open\n`), /line 5: line break inside a quoted string/)
    assert.throws(() => parse(`${HEAD}www A ( 192.0.2.1\n`), /line 5: parenthesis opened here is never closed/)
    assert.throws(() => parse(`${HEAD}www A 192.0.2.1 )\n`), /line 5: closing parenthesis/)
    assert.throws(() => parse(`${HEAD}www A 192.0.2.1\x00\n`), /control character/)
    assert.throws(() => parse(' A 192.0.2.1\n'), /line 1: the first record has no owner name/)
  })
})

describe('zone rules', () => {
  test('apex SOA and NS', () => {
    refuse('$TTL 300\n@ NS ns1\nns1 A 192.0.2.1\n', 'apex_violation', /no SOA/)
    refuse(`${HEAD}@ SOA ns2 hostmaster 2 3600 900 604800 300\n`, 'apex_violation', /second SOA record/)
    refuse(`${HEAD}www SOA ns1 hostmaster 2 3600 900 604800 300\n`, 'apex_violation', /must be at the zone apex/)
    refuse('$TTL 300\n@ SOA ns1 hostmaster 1 3600 900 604800 300\nns1 A 192.0.2.1\n', 'apex_violation', /no NS/)
  })

  test('owner names outside the zone', () => {
    refuse(`${HEAD}www.example.org. A 192.0.2.1\n`, 'name_outside_zone', /www\.example\.org\. is outside/)
    refuse(`${HEAD}$ORIGIN org.\nwww A 192.0.2.1\n`, 'name_outside_zone')
    refuse(`${HEAD}notexample.test. A 192.0.2.1\n`, 'name_outside_zone')
  })

  test('duplicates, RRsets with two TTLs, CNAME conflicts', () => {
    refuse(`${HEAD}www A 192.0.2.1\nWWW 300 IN A 192.0.2.1\n`, 'duplicate_record', /duplicate record: www A 192.0.2.1/)
    refuse(`${HEAD}www TXT "a"\nwww TXT a\n`, 'duplicate_record')
    refuse(`${HEAD}www AAAA 2001:db8::1\nwww AAAA 2001:0db8:0::1\n`, 'duplicate_record')
    refuse(`${HEAD}www 300 A 192.0.2.1\nwww 600 A 192.0.2.2\n`, 'invalid_ttl', /TTLs 300 and 600/)
    refuse(`${HEAD}www CNAME a\nwww A 192.0.2.1\n`, 'cname_conflict', /CNAME and A/)
    refuse(`${HEAD}www CNAME a\nwww CNAME b\n`, 'cname_conflict', /more than one CNAME/)
    refuse(`${HEAD}@ CNAME a\n`, 'cname_conflict')
  })

  test('zone-level errors name the line of the record in the text', () => {
    const text = `${HEAD}zzz A 192.0.2.9\nwww A 192.0.2.1\nmid A 192.0.2.5\nWWW A 192.0.2.1\n`
    refuse(text, 'duplicate_record', /^line 8: duplicate record: www A 192\.0\.2\.1/)
    refuse(
      `${HEAD}\n\nsub NS ns.sub\n`,
      'invalid_record',
      /^line 7: name server ns\.sub\.example\.test\. .*missing glue/,
    )
    refuse(`${HEAD}www.example.org. A 192.0.2.1\n`, 'name_outside_zone', /^line 5: /)
  })
})

// ---- property tests ----

const label = fc.stringMatching(/^[a-z0-9_][a-z0-9_-]{0,9}$/)
const owner = fc.oneof(
  fc.constant('@'),
  fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join('.')),
  fc.constant('*.wild'),
)
const target = fc.oneof(
  fc.constant('@'),
  label,
  fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => `${l.join('.')}.example.net.`),
)
const octet = fc.integer({ min: 0, max: 255 })
const u16 = fc.integer({ min: 0, max: 65535 })
const bytes = fc.uint8Array({ maxLength: 40 })

function escapeAll(b: Uint8Array): string {
  // A noisy but valid spelling: random-looking mix of \DDD and plain characters.
  return [...b]
    .map((x, i) =>
      x === 0x22 || x === 0x5c || x < 0x20 || x > 0x7e || i % 3 === 0
        ? `\\${String(x).padStart(3, '0')}`
        : String.fromCharCode(x),
    )
    .join('')
}

const rdata = fc.oneof(
  fc.tuple(octet, octet, octet, octet).map((o) => ['A', o.join('.')] as const),
  fc
    .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
    .map((h) => ['AAAA', h.map((x) => x.toString(16)).join(':')] as const),
  target.map((t) => ['NS', t] as const),
  target.map((t) => ['CNAME', t] as const),
  fc.tuple(u16, target).map(([p, t]) => ['MX', `${p} ${t}`] as const),
  fc.tuple(u16, u16, u16, target).map(([a, b, c, t]) => ['SRV', `${a} ${b} ${c} ${t}`] as const),
  fc
    .array(bytes, { minLength: 1, maxLength: 3 })
    .map((s) => ['TXT', s.map((b) => `"${escapeAll(b)}"`).join(' ')] as const),
  fc
    .tuple(octet, fc.constantFrom('issue', 'issuewild', 'iodef', 'TAG9'), bytes)
    .map(([f, t, v]) => ['CAA', `${f} ${t} "${escapeAll(v)}"`] as const),
)

const zoneArb = fc.record({
  ttl: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  records: fc.array(fc.tuple(owner, fc.integer({ min: 0, max: 2 ** 31 - 1 }), rdata), { maxLength: 25 }),
})

function zoneTextOf(z: { ttl: number; records: (readonly [string, number, readonly [string, string]])[] }): string {
  const lines = [`$TTL ${z.ttl}`, '@ IN SOA ns1 hostmaster 42 3600 900 604800 300', '@ NS ns1']
  for (const [o, ttl, [type, data]] of z.records) lines.push(`${o} ${ttl} IN ${type} ${data}`)
  return `${lines.join('\n')}\n`
}

describe('zone text properties', () => {
  test('parse(render(z)) equals z for every parsed zone', () => {
    fc.assert(
      fc.property(zoneArb, (z) => {
        const zone = parse(zoneTextOf(z))
        assert.deepEqual(parse(renderZone(zone)), zone)
        assert.equal(renderZone(parse(renderZone(zone))), renderZone(zone))
      }),
      { numRuns: 300 },
    )
  })

  test('rendering is independent of record order and spelling', () => {
    fc.assert(
      fc.property(zoneArb, fc.integer(), (z, seed) => {
        const plain = parse(zoneTextOf(z))
        const key = (i: number) => Math.abs((i * 7919 + seed) % 101)
        const shuffled = z.records
          .map((r, i) => [key(i), r] as const)
          .sort((a, b) => a[0] - b[0])
          .map(([, r]) => r)
        const noisy = zoneTextOf({ ...z, records: shuffled })
          .split('\n')
          .map((l) => (l.startsWith('$') || l === '' ? l : `${l.replace(' IN ', ' in ')} ; comment`))
          .join('\n')
        assert.equal(renderZone(parse(noisy)), renderZone(plain))
      }),
      { numRuns: 150 },
    )
  })

  test('arbitrary text never crashes or hangs the parser: a zone or a ZoneError', () => {
    const valid = zoneTextOf({ ttl: 300, records: [['www', 60, ['TXT', '"a b" c']]] })
    const mutated = fc
      .tuple(fc.integer({ min: 0, max: valid.length }), fc.string({ maxLength: 12 }), fc.nat(6))
      .map(([at, insert, drop]) => valid.slice(0, at) + insert + valid.slice(at + drop))
    const zoneish = fc
      .array(
        fc.constantFrom(
          '@',
          'www',
          '$TTL',
          '$ORIGIN',
          '$INCLUDE',
          '(',
          ')',
          ';',
          '"',
          '\\',
          '\\0',
          'IN',
          'CH',
          'A',
          'TXT',
          'SOA',
          '300',
          '1h',
          ' ',
          '\t',
          '\n',
          '\r\n',
          'x.',
          '.',
          '192.0.2.1',
          '::1',
          '*',
        ),
        { maxLength: 60 },
      )
      .map((parts) => parts.join(' '))
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 100 }), mutated, zoneish),
        (text) => {
          try {
            validateZone(parse(text))
          } catch (err) {
            assert.ok(err instanceof ZoneError, `unexpected ${(err as Error).stack}`)
            assert.ok(err.message.length > 0)
          }
        },
      ),
      { numRuns: 2000 },
    )
  })
})

describe('name helpers against their plain definitions', () => {
  // The helpers walk strings in place for speed; these are the definitions they must agree with.
  function compareByLabels(a: string, b: string): number {
    const la = a === '.' ? [] : a.slice(0, -1).split('.').reverse()
    const lb = b === '.' ? [] : b.slice(0, -1).split('.').reverse()
    for (let i = 0; i < Math.min(la.length, lb.length); i++) {
      if (la[i] !== lb[i]) return la[i]! < lb[i]! ? -1 : 1
    }
    return Math.sign(la.length - lb.length)
  }
  function validByLabels(name: string): boolean {
    if (name === '.') return true
    if (name.length + 1 > 255) return false
    const labels = name.slice(0, -1).split('.')
    return labels.every((l, i) => (l === '*' ? i === 0 : /^[a-z0-9_-]{1,63}$/.test(l)))
  }
  const piece = fc.constantFrom(
    'a',
    'b',
    'z',
    '0',
    '9',
    '-',
    '_',
    '*',
    '.',
    'A',
    'é',
    ' ',
    'x'.repeat(63),
    'y'.repeat(64),
  )
  const written = fc.array(piece, { maxLength: 12 }).map((p) => p.join(''))

  test('compareNames is RFC 4034 order: labels right to left, a name before its subdomains', () => {
    const label = fc.stringMatching(/^[a-c0-9_-]{1,4}$/)
    const name = fc.array(label, { maxLength: 4 }).map((l) => (l.length === 0 ? '.' : `${l.join('.')}.`))
    fc.assert(
      fc.property(name, name, (a, b) => {
        assert.equal(compareNames(a, b), compareByLabels(a, b), `${a} vs ${b}`)
      }),
      { numRuns: 2000 },
    )
  })

  test('resolveName accepts exactly the host-name subset, with a clear error otherwise', () => {
    fc.assert(
      fc.property(written, (w) => {
        let expected: string | undefined
        if (w === '@') expected = ORIGIN
        else if (w !== '' && !w.includes('\\')) {
          const absolute = (w === '.' ? '.' : w.endsWith('.') ? w : `${w}.${ORIGIN}`).toLowerCase()
          expected = validByLabels(absolute) ? absolute : undefined
        }
        let got: string | undefined
        try {
          got = resolveName(w, ORIGIN)
        } catch (err) {
          assert.ok(err instanceof NameError, String(err))
          assert.ok(err.message.length > 0)
        }
        assert.equal(got, expected, JSON.stringify(w))
      }),
      { numRuns: 3000 },
    )
  })
})
