/**
 * A minimal ZIP writer for inline publishing (`artsvc_publish` with a file map): stored
 * entries, UTF-8 names, no extra fields. Whatever it writes still goes through the same
 * reader and rules as an uploaded ZIP (zip.ts), so a bad name is refused there.
 * Layout: APPNOTE 6.3.10, sections 4.3.7 (local header), 4.3.12 (central header), 4.3.16 (end record).
 */
import { crc32 } from 'node:zlib'

const UTF8_FLAG = 0x0800
// 1980-01-01 00:00 in MS-DOS date/time: versions are immutable, a fixed stamp keeps bytes reproducible.
const DOS_DATE = (0 << 9) | (1 << 5) | 1

export function writeZip(files: { path: string; data: Buffer }[]): Buffer {
  const parts: Buffer[] = []
  const central: Buffer[] = []
  let offset = 0
  for (const f of files) {
    const name = Buffer.from(f.path, 'utf8')
    const crc = crc32(f.data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4) // version needed
    local.writeUInt16LE(UTF8_FLAG, 6)
    local.writeUInt16LE(0, 8) // stored
    local.writeUInt16LE(0, 10) // time
    local.writeUInt16LE(DOS_DATE, 12)
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(f.data.length, 18)
    local.writeUInt32LE(f.data.length, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(0, 28)
    const entry = Buffer.alloc(46)
    entry.writeUInt32LE(0x02014b50, 0)
    entry.writeUInt16LE(20, 4) // made by
    entry.writeUInt16LE(20, 6)
    entry.writeUInt16LE(UTF8_FLAG, 8)
    entry.writeUInt16LE(0, 10)
    entry.writeUInt16LE(0, 12)
    entry.writeUInt16LE(DOS_DATE, 14)
    entry.writeUInt32LE(crc, 16)
    entry.writeUInt32LE(f.data.length, 20)
    entry.writeUInt32LE(f.data.length, 24)
    entry.writeUInt16LE(name.length, 28)
    entry.writeUInt32LE(offset, 42) // (30-41: extra, comment, disk, attributes: all zero)
    parts.push(local, name, f.data)
    central.push(entry, name)
    offset += local.length + name.length + f.data.length
  }
  const cd = Buffer.concat(central)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(files.length, 8)
  end.writeUInt16LE(files.length, 10)
  end.writeUInt32LE(cd.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...parts, cd, end])
}
