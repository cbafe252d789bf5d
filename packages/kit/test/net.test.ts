import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  AddressError,
  CidrSet,
  cidrContains,
  isIp,
  isLoopback,
  isPublicIp,
  normalizeIp,
  parseCidr,
  parseIp,
  parseListenAddress,
} from '../src/index.ts'

describe('parseIp', () => {
  test('normalises IPv4-mapped IPv6 to IPv4', () => {
    const addr = parseIp('::ffff:1.2.3.4')
    assert.equal(addr.kind(), 'ipv4')
    assert.equal(addr.toString(), '1.2.3.4')
    assert.equal(normalizeIp('::FFFF:1.2.3.4'), '1.2.3.4')
  })

  test('canonical IPv6 text (RFC 5952)', () => {
    assert.equal(normalizeIp('2001:0DB8:0000:0000:0000:0000:0000:0001'), '2001:db8::1')
    assert.equal(normalizeIp(' 127.0.0.1 '), '127.0.0.1')
  })

  test("normalizeIp's dotted-quad shortcut agrees with the full parse on any dotted text", () => {
    // The full parse, without the shortcut: what normalizeIp gave before it.
    const full = (t: string) => {
      try {
        return parseIp(t).toString()
      } catch (err) {
        return err instanceof AddressError ? 'refused' : 'threw'
      }
    }
    const viaNormalize = (t: string) => {
      try {
        return normalizeIp(t)
      } catch (err) {
        return err instanceof AddressError ? 'refused' : 'threw'
      }
    }
    const part = fc.oneof(
      fc.integer({ min: 0, max: 999 }).map(String),
      fc.constantFrom('', '00', '01', '007', '0x1', ' 1', '1 ', '255', '256', '-1', '+1', '1e2', '٣'),
    )
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 6 }), (parts) => {
        const text = parts.join('.')
        assert.equal(viaNormalize(text), full(text), text)
      }),
      { numRuns: 5000 },
    )
    for (const t of ['0.0.0.0', '255.255.255.255', '10.0.0.1', '192.168.1.254']) assert.equal(normalizeIp(t), t)
    for (const t of ['010.0.0.1', '1.2.3.04', '256.0.0.1', '1.2.3.4.', '.1.2.3.4', '1..2.3'])
      assert.equal(viaNormalize(t), full(t), t)
  })

  for (const bad of [
    '10.1',
    '1.2.3',
    '1.2.3.4%eth0',
    'fe80::1%eth0',
    'garbage',
    '',
    '256.1.1.1',
    '1.2.3.4.5',
    '0x7f.0.0.1',
    '::g',
  ]) {
    test(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseIp(bad), AddressError)
      assert.equal(isIp(bad), false)
    })
  }

  test('property: never throws anything but AddressError', () => {
    const check = (s: string) => {
      try {
        parseIp(s)
      } catch (err) {
        assert.ok(err instanceof AddressError, `unexpected ${String(err)} for ${JSON.stringify(s)}`)
      }
    }
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 64 }), check), { numRuns: 2000 })
    // Strings made of address characters reach deeper into the parser.
    const addrChars = fc.string({
      unit: fc.constantFrom(...'0123456789abcdefABCDEFx:.%/[] '.split('')),
      maxLength: 48,
    })
    fc.assert(fc.property(addrChars, check), { numRuns: 5000 })
  })
})

describe('parseCidr', () => {
  test('canonical text', () => {
    assert.equal(parseCidr('10.0.0.0/8').text, '10.0.0.0/8')
    assert.equal(parseCidr('2001:0db8::/32').text, '2001:db8::/32')
    assert.equal(parseCidr('192.0.2.7').text, '192.0.2.7/32')
    assert.equal(parseCidr('::1').text, '::1/128')
    assert.equal(parseCidr('0.0.0.0/0').text, '0.0.0.0/0')
  })

  test('host bits set is an error naming the network', () => {
    assert.throws(
      () => parseCidr('10.1.2.3/8'),
      (err: unknown) => {
        assert.ok(err instanceof AddressError)
        assert.match(err.message, /host bits set \(network is 10\.0\.0\.0\/8\)/)
        return true
      },
    )
    assert.throws(() => parseCidr('2001:db8::1/32'), AddressError)
  })

  test('loose clears host bits', () => {
    assert.equal(parseCidr('10.1.2.3/8', { loose: true }).text, '10.0.0.0/8')
    assert.equal(parseCidr('2001:db8::1/32', { loose: true }).text, '2001:db8::/32')
  })

  test('mapped IPv6 prefix becomes the IPv4 prefix', () => {
    const c = parseCidr('::ffff:10.0.0.0/104')
    assert.equal(c.text, '10.0.0.0/8')
    assert.equal(c.address.kind(), 'ipv4')
    assert.throws(() => parseCidr('::ffff:10.0.0.0/90'), AddressError)
  })

  for (const bad of [
    '10.0.0.0/33',
    '::/129',
    '10.0.0.0/',
    '10.0.0.0/-1',
    '10.0.0.0/8/8',
    '10.0.0.0/a',
    '10.0/8',
    'x/8',
  ]) {
    test(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseCidr(bad), AddressError)
    })
  }
})

describe('CidrSet', () => {
  const set = new CidrSet(['10.0.0.0/8', '192.168.1.0/24', '2001:db8::/32'])

  test('membership', () => {
    assert.equal(set.size, 3)
    assert.equal(set.has('10.2.3.4'), true)
    assert.equal(set.has('::ffff:10.2.3.4'), true)
    assert.equal(set.has('192.168.1.255'), true)
    assert.equal(set.has('192.168.2.1'), false)
    assert.equal(set.has('2001:db8:1::5'), true)
    assert.equal(set.has('2001:db9::1'), false)
    assert.equal(set.has('not an ip'), false)
  })

  test('IPv4 and IPv6 never cross-match', () => {
    const all4 = new CidrSet(['0.0.0.0/0'])
    const all6 = new CidrSet(['::/0'])
    assert.equal(all4.has('::1'), false)
    assert.equal(all4.has('2001:db8::1'), false)
    assert.equal(all6.has('127.0.0.1'), false)
    assert.equal(all6.has('::ffff:127.0.0.1'), false, 'a mapped address is IPv4 after normalising')
    assert.equal(cidrContains(parseCidr('::/0'), parseIp('1.2.3.4')), false)
  })
})

describe('isPublicIp', () => {
  const notPublic = [
    '127.0.0.1',
    '::1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.0.1',
    '169.254.1.1',
    'fe80::1',
    'fd00::1',
    'fc00::1',
    '0.0.0.0',
    '::',
    '100.64.0.1',
    '::ffff:192.168.0.1',
    '224.0.0.1',
  ]
  for (const ip of notPublic) {
    test(`${ip} is not public`, () => assert.equal(isPublicIp(ip), false))
  }
  for (const ip of ['1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
    test(`${ip} is public`, () => assert.equal(isPublicIp(ip), true))
  }
  test('garbage throws AddressError', () => {
    assert.throws(() => isPublicIp('nope'), AddressError)
  })
  test('isLoopback', () => {
    assert.equal(isLoopback('127.0.0.1'), true)
    assert.equal(isLoopback('127.1.2.3'), true)
    assert.equal(isLoopback('::1'), true)
    assert.equal(isLoopback('localhost'), true)
    assert.equal(isLoopback('10.0.0.1'), false)
  })
})

describe('parseListenAddress', () => {
  const valid: Array<[string, { host: string; port: number }]> = [
    ['127.0.0.1:8053', { host: '127.0.0.1', port: 8053 }],
    ['[::1]:443', { host: '::1', port: 443 }],
    [':8080', { host: '0.0.0.0', port: 8080 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['0.0.0.0:65535', { host: '0.0.0.0', port: 65535 }],
  ]
  for (const [text, want] of valid) {
    test(`accepts ${text}`, () => assert.deepEqual(parseListenAddress(text), want))
  }
  for (const bad of [
    '127.0.0.1',
    '127.0.0.1:65536',
    '::1:80',
    '[nothost]:80',
    '[::1]',
    'host:port',
    '1.2.3.4:-1',
    '',
  ]) {
    test(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(
        () => parseListenAddress(bad),
        (err: unknown) => {
          assert.ok(err instanceof AddressError)
          assert.match(err.message, /invalid listen address/)
          return true
        },
      )
    })
  }
})
