import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { parseClfTime } from '../src/logs/clf-time.ts'
import { hostOf, parseCombined, parseVhostCombined } from '../src/logs/combined.ts'
import { jsonParser } from '../src/logs/json.ts'
import { makeParser } from '../src/logs/parser.ts'
import { unwrapSyslog } from '../src/logs/syslog.ts'

const LINE =
  '203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a.gif?x=1 HTTP/1.0" 200 2326 "http://r/" "Mozilla/4.08"'

describe('combined', () => {
  test('parses the fields', () => {
    const r = parseCombined(LINE)
    assert.deepEqual(r, {
      ip: '203.0.113.9',
      host: undefined,
      timeMs: Date.UTC(2000, 9, 10, 20, 55, 36),
      target: '/a.gif?x=1',
      status: 200,
      userAgent: 'Mozilla/4.08',
    })
  })
  test('common format without referer/agent, escaped quotes, dash size', () => {
    assert.equal(parseCombined('::1 - bob [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 304 -')?.status, 304)
    const r = parseCombined('1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET /\\"x HTTP/1.1" 404 1 "-" "a \\"b\\""')
    assert.equal(r?.target, '/\\"x')
    assert.equal(r?.userAgent, 'a \\"b\\"')
  })
  test('vhost variant takes the host without its port', () => {
    assert.equal(parseVhostCombined(`www.Example.org:443 ${LINE}`)?.host, 'www.example.org')
    assert.equal(parseVhostCombined(`[2001:db8::1]:80 ${LINE}`)?.host, '[2001:db8::1]')
    assert.equal(parseVhostCombined(LINE), undefined)
  })
  test('garbage does not match', () => {
    for (const s of ['', '-', 'hello world', '1.2.3.4 - - [bad] "GET / HTTP/1.1" 200 1']) {
      assert.equal(parseCombined(s), undefined)
    }
  })
  test('CLF time with offsets; malformed is NaN', () => {
    assert.equal(parseClfTime('01/Jan/2026:00:00:00 +0100'), Date.UTC(2025, 11, 31, 23))
    assert.ok(Number.isNaN(parseClfTime('01/Foo/2026:00:00:00 +0100')))
    assert.ok(Number.isNaN(parseClfTime('1/Jan/2026:00:00:00 +0100')))
  })
})

describe('json lines', () => {
  test('default nginx-style names', () => {
    const p = jsonParser()
    const r = p(
      '{"remote_addr":"198.51.100.1","host":"A.example","request_uri":"/x","status":"404","http_user_agent":"ua","time":"2026-11-25T08:00:00Z"}',
    )
    assert.deepEqual(r, {
      ip: '198.51.100.1',
      host: 'a.example',
      target: '/x',
      status: 404,
      userAgent: 'ua',
      timeMs: Date.UTC(2026, 10, 25, 8),
    })
  })
  test('configured dotted names, request line, epoch seconds', () => {
    const p = jsonParser({ ip: 'client.ip', request: 'req', status: 'code', time: 'ts', target: 'missing' })
    const r = p('{"client":{"ip":"::1"},"req":"POST /login HTTP/2","code":401,"ts":1764057600}')
    assert.equal(r?.ip, '::1')
    assert.equal(r?.target, '/login')
    assert.equal(r?.status, 401)
    assert.equal(r?.timeMs, 1764057600_000)
  })
  test('missing or bad fields do not match', () => {
    const p = jsonParser()
    for (const s of ['{}', '[]', 'null', '{"remote_addr":"1.2.3.4","status":"abc","request_uri":"/"}', '{bad']) {
      assert.equal(p(s), undefined)
    }
  })
})

describe('syslog envelope', () => {
  test('RFC 5424 with and without structured data', () => {
    assert.equal(unwrapSyslog('<190>1 2026-11-25T08:00:00Z web1 nginx - - - MSG here'), 'MSG here')
    assert.equal(unwrapSyslog('<190>1 2026-11-25T08:00:00Z web1 nginx 12 ID [a@1 k="v ]"][b@2 x="y"] MSG'), 'MSG')
    assert.equal(unwrapSyslog('<190>1 2026-11-25T08:00:00Z web1 nginx 12 ID [unterminated'), undefined)
  })
  test('RFC 3164, with or without PRI', () => {
    assert.equal(unwrapSyslog('<190>Nov 25 08:00:00 web1 nginx: MSG'), 'MSG')
    assert.equal(unwrapSyslog('Nov  5 08:00:00 web1 nginx[12]: MSG x'), 'MSG x')
    assert.equal(unwrapSyslog('<999999>Nov 25 08:00:00 web1 nginx: MSG'), undefined)
  })
  test('around combined', () => {
    const p = makeParser({ format: 'combined', syslog: true })
    assert.equal(p(`<190>Nov 25 08:00:00 web1 nginx: ${LINE}`)?.ip, '203.0.113.9')
    assert.equal(p(LINE), undefined)
  })
})

/**
 * The combined scanner must accept exactly what this anchored regex (its specification, and
 * the parser it replaced) accepts, with the same fields.
 */
const Q = String.raw`"((?:[^"\\]|\\.)*)"`
const CORE = String.raw`(\S+) \S+ \S+ \[([^\]]{26})\] ${Q} (\d{3}) (?:\d+|-)(?: ${Q} ${Q})?`
const REF_COMBINED = new RegExp(`^${CORE}`)
const REF_VHOST = new RegExp(String.raw`^(\S+) ${CORE}`)

function reference(line: string, vhost: boolean) {
  const m = (vhost ? REF_VHOST : REF_COMBINED).exec(line)
  if (!m) return undefined
  const o = vhost ? 1 : 0
  const request = m[o + 3]!
  const a = request.indexOf(' ')
  const b = request.lastIndexOf(' ')
  return {
    ip: m[o + 1]!,
    host: vhost ? hostOf(m[1]!) : undefined,
    timeMs: parseClfTime(m[o + 2]!),
    target: a === -1 ? request : b > a ? request.slice(a + 1, b) : request.slice(a + 1),
    status: Number(m[o + 4]),
    userAgent: m[o + 6] ?? '',
  }
}

describe('combined scanner against the reference regex', () => {
  // Pieces of combined lines and the characters the grammar turns on, including the
  // whitespace `\S` excludes beyond ASCII and the line terminators `.` does not match.
  const unit = fc.constantFrom(...'"\\[] -07a:/\t\r\u00a0\u2028\u3000\u00e9\ud83d')
  const seeds = fc.constantFrom(
    LINE,
    `vh:80 ${LINE}`,
    '::1 - bob [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 304 -',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "GET /\\"x HTTP/1.1" 404 1 "-" "a \\"b\\""',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "" 200 12 "" ""',
    '1.2.3.4 - - [10/Oct/2000:13:55:36 +0000] "x" 200 12a "r" "u" trailing',
  )
  const mutated = fc
    .tuple(seeds, fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.string({ unit, maxLength: 4 })), { maxLength: 4 }))
    .map(([v, edits]) => {
      let s = v
      for (const [at, del, ins] of edits) {
        const i = at % (s.length + 1)
        s = s.slice(0, i) + ins + s.slice(i + del)
      }
      return s
    })
  test('same result on mutated and arbitrary lines', () => {
    fc.assert(
      fc.property(fc.oneof(mutated, mutated, fc.string({ unit, maxLength: 200 })), (s) => {
        assert.deepEqual(parseCombined(s), reference(s, false), JSON.stringify(s))
        assert.deepEqual(parseVhostCombined(s), reference(s, true), JSON.stringify(s))
        assert.deepEqual(parseVhostCombined(`h:1 ${s}`), reference(`h:1 ${s}`, true), JSON.stringify(s))
      }),
      { numRuns: 20_000 },
    )
  })
  test('consecutive lines with different times each get their own', () => {
    const a = parseCombined(LINE)!.timeMs
    const b = parseCombined(LINE.replace('13:55:36', '13:55:37'))!.timeMs
    assert.equal(b - a, 1000)
    assert.ok(Number.isNaN(parseCombined(LINE.replace('Oct', 'Foo'))!.timeMs))
    assert.equal(parseCombined(LINE)!.timeMs, a)
  })
})

describe('fuzz: never a crash, never a hang', () => {
  const parsers = [
    makeParser({ format: 'combined' }),
    makeParser({ format: 'vhost_combined' }),
    makeParser({ format: 'json' }),
    makeParser({ format: 'combined', syslog: true }),
    makeParser({ format: 'json', syslog: true }),
  ]
  // Seeds: valid lines, truncated ones, and mutations with the characters parsers care about.
  const valid = fc.constantFrom(
    LINE,
    `vh:80 ${LINE}`,
    `<190>1 2026-11-25T08:00:00Z h a - - [x@1 a="b"] ${LINE}`,
    `<1>Nov 25 08:00:00 h a: ${LINE}`,
    '{"remote_addr":"1.2.3.4","request_uri":"/","status":200}',
  )
  const noisy = fc
    .tuple(
      valid,
      fc.nat(),
      fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', ' ', '<', '>', '{', '}', ':', 'a', '0', '\u00e9', '\n') }),
    )
    .map(([v, cut, junk]) => {
      const at = cut % (v.length + 1)
      return v.slice(0, at) + junk + v.slice(at)
    })
  const line = fc.oneof(valid, noisy, fc.string({ maxLength: 2000 }), fc.string({ unit: 'binary', maxLength: 500 }))
  test('arbitrary and mutated lines', () => {
    fc.assert(
      fc.property(line, (s) => {
        for (const p of parsers) {
          const r = p(s)
          if (r !== undefined) {
            assert.equal(typeof r.ip, 'string')
            assert.ok(Number.isInteger(r.status))
          }
        }
      }),
      { numRuns: 3000 },
    )
  })
  test('pathological 16 KiB lines finish', () => {
    const big = [
      `1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "${'\\"'.repeat(8000)}`,
      `${'a '.repeat(8000)}`,
      `<1>1 ${'[a '.repeat(5000)}`,
      `{${'"a":{'.repeat(2000)}`,
      `1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "${'\\'.repeat(16000)}`,
    ]
    for (const s of big) for (const p of parsers) p(s)
  })
})
