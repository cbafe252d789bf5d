/**
 * Builds ClientHello records from lists (for published reference values and malformed
 * variants): what a client would send, byte for byte, in one or several records.
 */
export interface HelloSpec {
  legacyVersion?: number
  ciphers: number[]
  /** Extension types in order; the builder fills the ones the fingerprints read. */
  extensions: number[]
  groups?: number[]
  pointFormats?: number[]
  sigAlgs?: number[]
  versions?: number[]
  alpn?: string[]
  sni?: string
  /** Split the handshake message into records of at most this many bytes. */
  recordSize?: number
}

const u16 = (v: number) => Buffer.from([v >> 8, v & 0xff])
const vec16 = (b: Buffer) => Buffer.concat([u16(b.length), b])
const vec8 = (b: Buffer) => Buffer.concat([Buffer.from([b.length]), b])
const list16 = (vs: number[]) => Buffer.concat(vs.map(u16))

function extensionData(type: number, s: HelloSpec): Buffer {
  switch (type) {
    case 0x0000: {
      const name = Buffer.from(s.sni ?? 'example.test')
      return vec16(Buffer.concat([Buffer.from([0]), vec16(name)]))
    }
    case 0x000a:
      return vec16(list16(s.groups ?? []))
    case 0x000b:
      return vec8(Buffer.from(s.pointFormats ?? [0]))
    case 0x000d:
      return vec16(list16(s.sigAlgs ?? []))
    case 0x0010:
      return vec16(Buffer.concat((s.alpn ?? []).map((p) => vec8(Buffer.from(p, 'latin1')))))
    case 0x002b:
      return vec8(list16(s.versions ?? [0x0304, 0x0303]))
    case 0x0033:
      return vec16(Buffer.concat([u16(0x001d), vec16(Buffer.alloc(32, 7))]))
    default:
      return Buffer.alloc(0)
  }
}

/** The handshake message (type, length, body). */
export function helloMessage(s: HelloSpec): Buffer {
  const exts = Buffer.concat(s.extensions.map((t) => Buffer.concat([u16(t), vec16(extensionData(t, s))])))
  const body = Buffer.concat([
    u16(s.legacyVersion ?? 0x0303),
    Buffer.alloc(32, 1),
    vec8(Buffer.alloc(32, 2)),
    vec16(list16(s.ciphers)),
    vec8(Buffer.from([0])),
    vec16(exts),
  ])
  return Buffer.concat([Buffer.from([1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body])
}

/** Wrap a handshake message into records of at most `size` bytes. */
export function records(message: Buffer, size = 16_384): Buffer {
  const out: Buffer[] = []
  for (let i = 0; i < message.length; i += size) {
    const part = message.subarray(i, i + size)
    out.push(Buffer.from([0x16, 3, 1, part.length >> 8, part.length & 0xff]), part)
  }
  return Buffer.concat(out)
}

export function buildHello(s: HelloSpec): Buffer {
  return records(helloMessage(s), s.recordSize)
}

/**
 * Chrome 143 as published with its JA3 and JA4 (a browserleaks.com capture: ja3_text
 * `771,4865-...,45-51-16-65037-23-17613-0-11-10-43-65281-35-18-5-13-27,4588-29-23-24,0`,
 * ja3_hash 98487aa16281980e7d1120d399efb6a4, ja4 t13d1516h2_8daaf6152771_d8a2da3f94cd), with
 * GREASE values added where Chrome puts them.
 */
export const CHROME_143: HelloSpec = {
  ciphers: [0x8a8a, 4865, 4866, 4867, 49195, 49199, 49196, 49200, 52393, 52392, 49171, 49172, 156, 157, 47, 53],
  extensions: [0x2a2a, 45, 51, 16, 65037, 23, 17613, 0, 11, 10, 43, 65281, 35, 18, 5, 13, 27, 0x3a3a],
  groups: [0x4a4a, 4588, 29, 23, 24],
  pointFormats: [0],
  sigAlgs: [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601],
  versions: [0x5a5a, 0x0304, 0x0303],
  alpn: ['h2', 'http/1.1'],
  sni: 'tls.browserleaks.com',
}

/**
 * FoxIO's documented JA4 example (technical_details/JA4.md, "Raw Output": JA4_ro
 * `t13d1516h2_1301,...,0035_001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_0403,...`)
 * whose JA4 is t13d1516h2_8daaf6152771_e5627efa2ab1.
 */
export const FOXIO_EXAMPLE: HelloSpec = {
  ciphers: [
    0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f,
    0x0035,
  ],
  extensions: [
    0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012, 0x002b, 0xff01, 0x000b,
    0x000a, 0x0015,
  ],
  groups: [29, 23, 24],
  sigAlgs: [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601],
  versions: [0x0304, 0x0303],
  alpn: ['h2', 'http/1.1'],
}
