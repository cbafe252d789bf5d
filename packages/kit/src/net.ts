/**
 * Addresses: IP parsing with IPv4-mapped IPv6 normalised to IPv4, CIDR membership,
 * and `host:port` listen addresses.
 */
import ipaddr from 'ipaddr.js'

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6

export class AddressError extends Error {
  override readonly name = 'AddressError'
}

/**
 * Parse an address; `::ffff:192.0.2.1` becomes `192.0.2.1`. Zone ids (`%eth0`) are refused.
 *
 * @example normalizeIp('::ffff:10.0.0.1') // '10.0.0.1'
 */
export function parseIp(text: string): IpAddress {
  const s = text.trim()
  if (!ipaddr.isValid(s) || s.includes('%')) throw new AddressError(`invalid IP address ${JSON.stringify(text)}`)
  // ipaddr.isValid accepts shorthand IPv4 like "10.1"; demand four parts.
  if (!s.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(s)) {
    throw new AddressError(`invalid IP address ${JSON.stringify(text)}`)
  }
  const addr = ipaddr.parse(s)
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress())
    return (addr as ipaddr.IPv6).toIPv4Address()
  return addr
}

/** The canonical text of an address (IPv4 dotted quad, IPv6 RFC 5952 compressed). */
export function normalizeIp(text: string): string {
  // Most addresses a log line or a socket gives are already canonical dotted quads; parsing
  // them with ipaddr.js was about 6 % of websignal's ingest CPU (#22).
  if (isCanonicalIPv4(text)) return text
  const addr = parseIp(text)
  return addr.kind() === 'ipv6' ? (addr as ipaddr.IPv6).toRFC5952String() : addr.toString()
}

/** `a.b.c.d`, each part 0–255 in decimal without a leading zero: the text normalizeIp would give. */
function isCanonicalIPv4(text: string): boolean {
  const n = text.length
  if (n < 7 || n > 15) return false
  let parts = 0
  let value = 0
  let digits = 0
  for (let i = 0; i <= n; i++) {
    const c = i === n ? 46 : text.charCodeAt(i)
    if (c === 46) {
      // An empty part, a leading zero (octal to ipaddr.js) or a part over 255: the slow path says.
      if (digits === 0 || value > 255 || (digits > 1 && text.charCodeAt(i - digits) === 48)) return false
      parts++
      value = 0
      digits = 0
    } else if (c >= 48 && c <= 57) {
      if (++digits > 3) return false
      value = value * 10 + (c - 48)
    } else return false
  }
  return parts === 4
}

export function isIp(text: string): boolean {
  try {
    parseIp(text)
    return true
  } catch {
    return false
  }
}

export interface Cidr {
  address: IpAddress
  prefix: number
  /** Canonical text, network address with the host bits cleared: `10.0.0.0/8`. */
  text: string
}

/**
 * Parse `addr/prefix` (or a bare address as a host route). Host bits must be zero unless `loose`.
 *
 * @example parseCidr('2001:db8::/32').text // '2001:db8::/32'
 */
export function parseCidr(text: string, options: { loose?: boolean } = {}): Cidr {
  const s = text.trim()
  const slash = s.indexOf('/')
  const addrText = slash === -1 ? s : s.slice(0, slash)
  const addr = parseIp(addrText)
  // The prefix is written against the family of the text: a mapped IPv6 prefix like
  // ::ffff:10.0.0.0/104 is checked against 128, then becomes 10.0.0.0/8.
  const mapped = addr.kind() === 'ipv4' && addrText.includes(':')
  const max = addr.kind() === 'ipv4' && !mapped ? 32 : 128
  let prefix = addr.kind() === 'ipv4' ? 32 : 128
  if (slash !== -1) {
    const p = s.slice(slash + 1)
    if (!/^\d{1,3}$/.test(p) || Number(p) > max)
      throw new AddressError(`invalid prefix length in ${JSON.stringify(text)}`)
    prefix = mapped ? Number(p) - 96 : Number(p)
    if (prefix < 0)
      throw new AddressError(`invalid prefix length in ${JSON.stringify(text)} (a mapped IPv4 prefix is at least 96)`)
  }
  const network = networkOf(addr, prefix)
  if (!options.loose && network.toString() !== addr.toString()) {
    throw new AddressError(`${JSON.stringify(text)} has host bits set (network is ${format(network)}/${prefix})`)
  }
  return { address: network, prefix, text: `${format(network)}/${prefix}` }
}

function format(addr: IpAddress): string {
  return addr.kind() === 'ipv6' ? (addr as ipaddr.IPv6).toRFC5952String() : addr.toString()
}

function networkOf(addr: IpAddress, prefix: number): IpAddress {
  const bytes = addr.toByteArray()
  for (let i = 0; i < bytes.length; i++) {
    const bits = Math.max(0, Math.min(8, prefix - i * 8))
    bytes[i] = bytes[i]! & ((0xff << (8 - bits)) & 0xff)
  }
  return ipaddr.fromByteArray(bytes) as IpAddress
}

/** Whether the address lies inside the range (an IPv4 address never matches an IPv6 range). */
export function cidrContains(cidr: Cidr, ip: string | IpAddress): boolean {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip
  if (addr.kind() !== cidr.address.kind()) return false
  return (addr as ipaddr.IPv4).match(cidr.address as ipaddr.IPv4, cidr.prefix)
}

/** A set of ranges with membership tests; addresses are normalised first. */
export class CidrSet {
  readonly ranges: readonly Cidr[]
  constructor(ranges: Iterable<string | Cidr>) {
    this.ranges = [...ranges].map((r) => (typeof r === 'string' ? parseCidr(r) : r))
  }
  has(ip: string | IpAddress): boolean {
    let addr: IpAddress
    try {
      addr = typeof ip === 'string' ? parseIp(ip) : ip
    } catch {
      return false
    }
    return this.ranges.some((r) => cidrContains(r, addr))
  }
  get size(): number {
    return this.ranges.length
  }
}

/** Loopback, private, link-local, unique-local and other non-public addresses. */
export function isPublicIp(ip: string | IpAddress): boolean {
  const addr = typeof ip === 'string' ? parseIp(ip) : ip
  return addr.range() === 'unicast'
}

export function isLoopback(ip: string): boolean {
  try {
    return parseIp(ip).range() === 'loopback'
  } catch {
    return ip === 'localhost'
  }
}

export interface ListenAddress {
  host: string
  port: number
}

/** `host:port`, an IPv6 host in brackets: the inverse of `parseListenAddress`. */
export function formatListenAddress(a: { host: string; port: number }): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`
}

/**
 * Parse `host:port`, `[v6]:port` or `:port` (all interfaces).
 *
 * @example parseListenAddress('127.0.0.1:8053') // { host: '127.0.0.1', port: 8053 }
 */
export function parseListenAddress(text: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim())
  const port = m ? Number(m[3]) : Number.NaN
  if (!m || port > 65535)
    throw new AddressError(`invalid listen address ${JSON.stringify(text)} (use host:port or [v6]:port)`)
  const host = m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!)
  if (m[1] !== undefined && !isIp(host)) throw new AddressError(`invalid listen address ${JSON.stringify(text)}`)
  return { host, port }
}
