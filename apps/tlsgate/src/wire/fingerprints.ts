/**
 * TLS client fingerprints of a ClientHello:
 * - JA4 (FoxIO, BSD 3-Clause: the TLS client fingerprint only; the JA4+ family is under another
 *   licence and not implemented here): `t13d1516h2_8daaf6152771_d8a2da3f94cd`, see
 *   https://github.com/FoxIO-LLC/ja4/blob/main/technical_details/JA4.md
 * - JA3 (Salesforce): MD5 of `version,ciphers,extensions,groups,point_formats` in decimal, in
 *   the client's order (so browsers that shuffle their extensions change it; JA4 sorts).
 * GREASE values (RFC 8701) are ignored by both.
 */
import { hash } from 'node:crypto'
import type { ClientHello } from './client-hello.ts'
import { EXT, isGrease, JA4_VERSIONS } from './constants.ts'

export interface TlsFingerprints {
  /** The gate's fingerprint identifier. */
  ja4: string
  /** JA4 with the cipher and extension lists unhashed (`ja4_r`), for operators and tests. */
  ja4Raw: string
  ja3: string
  /** The JA3 text the MD5 is taken of. */
  ja3Text: string
}

const ZERO_HASH = '000000000000'
const hex4 = (v: number) => v.toString(16).padStart(4, '0')
const two = (n: number) => String(Math.min(n, 99)).padStart(2, '0')
// One-shot `hash`, no Hash object per digest (Chrome's hello: 7 -> 5.5 µs for both fingerprints).
const sha12 = (text: string) => hash('sha256', text, 'hex').slice(0, 12)
const isAlnum = (b: number) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)

/** JA4 "ALPN Extension Value": first and last characters of the first ALPN value, `00` without one. */
function alpnChars(alpn: readonly Buffer[]): string {
  const first = alpn[0]
  if (!first || first.length === 0) return '00'
  const a = first[0]!
  const z = first[first.length - 1]!
  if (isAlnum(a) && isAlnum(z)) return String.fromCharCode(a) + String.fromCharCode(z)
  // Not ASCII alphanumeric at either end: the first and last characters of its hex form.
  return a.toString(16).padStart(2, '0')[0]! + z.toString(16).padStart(2, '0')[1]!
}

/**
 * The values as 4-digit hex in hex order: sorting the numbers gives that order without string
 * comparisons (2-4x cheaper for a hostile hello with thousands of extensions, and for Chrome's 16).
 */
const sortedHex = (values: readonly number[]) =>
  [...values]
    .sort((x, y) => x - y)
    .map(hex4)
    .join(',')

function ja4Version(hello: ClientHello): string {
  const versions = hello.supportedVersions.filter((v) => !isGrease(v))
  const version = versions.length > 0 ? Math.max(...versions) : hello.legacyVersion
  return JA4_VERSIONS[version] ?? '00'
}

export function computeFingerprints(hello: ClientHello): TlsFingerprints {
  const ciphers = hello.ciphers.filter((c) => !isGrease(c))
  const extensions = hello.extensions.filter((e) => !isGrease(e))
  const a = `t${ja4Version(hello)}${hello.hasServerName ? 'd' : 'i'}${two(ciphers.length)}${two(extensions.length)}${alpnChars(hello.alpn)}`
  const sortedCiphers = sortedHex(ciphers)
  // SNI and ALPN are already in part a; they leave the sorted list.
  const sortedExts = sortedHex(extensions.filter((e) => e !== EXT.serverName && e !== EXT.alpn))
  const sigs = hello.signatureAlgorithms.filter((s) => !isGrease(s)).map(hex4)
  const c = sigs.length > 0 ? `${sortedExts}_${sigs.join(',')}` : sortedExts
  // JA4.md: no ciphers gives a b of twelve zeros, and so does an empty sorted extension list
  // for c (a hello whose only extensions are SNI and ALPN too: they are not in that list).
  const ja4 = `${a}_${ciphers.length > 0 ? sha12(sortedCiphers) : ZERO_HASH}_${sortedExts.length > 0 ? sha12(c) : ZERO_HASH}`
  const ja3Text = [
    String(hello.legacyVersion),
    ciphers.join('-'),
    extensions.join('-'),
    hello.supportedGroups.filter((g) => !isGrease(g)).join('-'),
    hello.ecPointFormats.join('-'),
  ].join(',')
  return {
    ja4,
    ja4Raw: `${a}_${sortedCiphers}_${c}`,
    ja3: hash('md5', ja3Text, 'hex'),
    ja3Text,
  }
}
