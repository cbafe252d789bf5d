/**
 * A ZIP writer for tests that can lie: every header field can be overridden, so the
 * hostile corpus (traversal, symlinks, bombs, lying sizes and CRCs, overlapping entries,
 * header mismatches, zip64) is built byte by byte instead of shipped as binaries.
 */
import { crc32, deflateRawSync } from 'node:zlib'

export interface ZipEntryInput {
  name: string | Buffer
  data?: Buffer | string
  /** 0 stored, 8 deflate (default 8 for files). */
  method?: number
  /** Unix mode (e.g. 0o120777 for a symlink); sets "made by Unix". */
  mode?: number
  /** Override what the headers claim. */
  crc?: number
  uncompressedSize?: number
  /** Name written in the local header (default: the same). */
  localName?: string
  /** CRC-32 and sizes written in the local header only (default: what the central directory says). */
  local?: { crc?: number; compressedSize?: number; uncompressedSize?: number }
  flags?: number
  /** Point the central entry at another entry's local header (by index). */
  shareLocalWith?: number
  /**
   * Store this entry (method 0) with the next entry's whole local record (header and data)
   * as its data, and point the next central entry inside it: two entries whose byte ranges
   * overlap although every header is consistent (the "overlapping files" bomb).
   */
  containsNext?: boolean
}

export interface ZipOptions {
  zip64?: boolean
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2)
  b.writeUInt16LE(n)
  return b
}
const u32 = (n: number) => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(n >>> 0)
  return b
}
const u64 = (n: number) => {
  const b = Buffer.alloc(8)
  b.writeBigUInt64LE(BigInt(n))
  return b
}

interface LocalRecord {
  local: Buffer
  body: Buffer
  crc: number
  usize: number
  method: number
  flags: number
  isDir: boolean
}

function localRecord(e: ZipEntryInput, z64: boolean, dataOverride?: Buffer): LocalRecord {
  const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name, 'utf8')
  const localName = e.localName === undefined ? name : Buffer.from(e.localName, 'utf8')
  const data =
    dataOverride ?? (e.data === undefined ? Buffer.alloc(0) : Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data))
  const isDir = name.toString().endsWith('/')
  const method = dataOverride ? 0 : (e.method ?? (isDir ? 0 : 8))
  const body = method === 8 ? deflateRawSync(data) : data
  const crc = e.crc ?? crc32(data)
  const usize = e.uncompressedSize ?? data.length
  const flags = e.flags ?? 1 << 11
  const localCrc = e.local?.crc ?? crc
  const localUsize = e.local?.uncompressedSize ?? usize
  const localCsize = e.local?.compressedSize ?? body.length
  const extra = z64 ? Buffer.concat([u16(1), u16(16), u64(localUsize), u64(localCsize)]) : Buffer.alloc(0)
  const local = Buffer.concat([
    u32(0x04034b50),
    u16(z64 ? 45 : 20),
    u16(flags),
    u16(method),
    u16(0),
    u16(0x21),
    u32(localCrc),
    u32(z64 ? 0xffffffff : localCsize),
    u32(z64 ? 0xffffffff : localUsize),
    u16(localName.length),
    u16(extra.length),
    localName,
    extra,
  ])
  return { local, body, crc, usize, method, flags, isDir }
}

export function buildZip(entries: ZipEntryInput[], options: ZipOptions = {}): Buffer {
  const parts: Buffer[] = []
  const central: Buffer[] = []
  const offsets: number[] = []
  let offset = 0
  const z64 = options.zip64 === true
  let nestedAt: number | undefined
  entries.forEach((e, i) => {
    const name = Buffer.isBuffer(e.name) ? e.name : Buffer.from(e.name, 'utf8')
    let rec: LocalRecord
    let entryOffset = offset
    if (e.containsNext) {
      const inner = localRecord(entries[i + 1]!, z64)
      const innerBytes = Buffer.concat([inner.local, inner.body])
      rec = localRecord(e, z64, innerBytes)
      nestedAt = offset + rec.local.length
    } else {
      rec = localRecord(e, z64)
    }
    const { body, crc, usize, method, flags, isDir } = rec
    if (e.shareLocalWith !== undefined) {
      entryOffset = offsets[e.shareLocalWith]!
    } else if (nestedAt !== undefined && !e.containsNext) {
      entryOffset = nestedAt
      nestedAt = undefined
    } else {
      parts.push(rec.local, body)
      offset += rec.local.length + body.length
    }
    offsets.push(entryOffset)
    const compressed = body.length
    const madeBy = e.mode !== undefined ? (3 << 8) | 20 : 20
    const attrs = e.mode !== undefined ? (e.mode << 16) >>> 0 : isDir ? 0x10 : 0
    const extra = z64
      ? Buffer.concat([u16(1), u16(24), u64(usize), u64(compressed), u64(entryOffset)])
      : Buffer.alloc(0)
    central.push(
      Buffer.concat([
        u32(0x02014b50),
        u16(madeBy),
        u16(z64 ? 45 : 20),
        u16(flags),
        u16(method),
        u16(0),
        u16(0x21),
        u32(crc),
        u32(z64 ? 0xffffffff : compressed),
        u32(z64 ? 0xffffffff : usize),
        u16(name.length),
        u16(extra.length),
        u16(0),
        u16(0),
        u16(0),
        u32(attrs),
        u32(z64 ? 0xffffffff : entryOffset),
        name,
        extra,
      ]),
    )
    void i
  })
  const cd = Buffer.concat(central)
  const cdOffset = offset
  const tail: Buffer[] = []
  if (z64) {
    const eocd64 = Buffer.concat([
      u32(0x06064b50),
      u64(44),
      u16(45),
      u16(45),
      u32(0),
      u32(0),
      u64(entries.length),
      u64(entries.length),
      u64(cd.length),
      u64(cdOffset),
    ])
    const locator = Buffer.concat([u32(0x07064b50), u32(0), u64(cdOffset + cd.length), u32(1)])
    tail.push(eocd64, locator)
  }
  tail.push(
    Buffer.concat([
      u32(0x06054b50),
      u16(0),
      u16(0),
      u16(z64 ? 0xffff : entries.length),
      u16(z64 ? 0xffff : entries.length),
      u32(z64 ? 0xffffffff : cd.length),
      u32(z64 ? 0xffffffff : cdOffset),
      u16(0),
    ]),
  )
  return Buffer.concat([...parts, cd, ...tail])
}

/** A small valid web bundle. */
export function sampleBundle(extra: ZipEntryInput[] = []): Buffer {
  return buildZip([
    {
      name: 'index.html',
      data: '<!doctype html><html><head><title>Sample</title></head><body><h1>Hello</h1><script type="module" src="app.js"></script></body></html>',
    },
    { name: 'app.js', data: 'document.body.dataset.ready = "yes"\n' },
    { name: 'css/', data: '' },
    { name: 'css/site.css', data: 'body { color: #123 }\n' },
    ...extra,
  ])
}
