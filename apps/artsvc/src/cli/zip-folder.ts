/**
 * A folder as a ZIP archive in memory (deflate, no extra fields, no symlinks followed), so
 * `artsvc publish DIR` and the demo need no `zip` tool. Layout: APPNOTE 6.3.10, sections
 * 4.3.7 (local header), 4.3.12 (central directory header) and 4.3.16 (end of central directory).
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { crc32, deflateRawSync } from 'node:zlib'

/** The file in a published folder that links it to its artifact (kept out of the ZIP). */
export const LINK_FILE = '.artsvc.json'

/** Regular files under `dir`, as forward-slash relative paths, sorted (symlinks and the link file are skipped). */
export function listFiles(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name)
      const st = lstatSync(full)
      if (st.isDirectory()) walk(full)
      else if (st.isFile() && !(d === dir && name === LINK_FILE)) out.push(relative(dir, full).split(sep).join('/'))
    }
  }
  walk(dir)
  return out
}

/** ZIP the regular files under `dir` (names relative to it). */
export function zipFolder(dir: string): Buffer {
  const locals: Buffer[] = []
  const centrals: Buffer[] = []
  let offset = 0
  for (const name of listFiles(dir)) {
    const data = readFileSync(join(dir, ...name.split('/')))
    const packed = deflateRawSync(data)
    const nameBytes = Buffer.from(name, 'utf8')
    const crc = crc32(data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0) // local file header signature
    local.writeUInt16LE(20, 4) // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6) // flags: bit 11, names are UTF-8
    local.writeUInt16LE(8, 8) // method: deflate
    local.writeUInt32LE(0x00210000, 10) // DOS time 00:00, date 1980-01-01
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(packed.length, 18)
    local.writeUInt32LE(data.length, 22)
    local.writeUInt16LE(nameBytes.length, 26)
    local.writeUInt16LE(0, 28) // extra field length
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0) // central directory header signature
    central.writeUInt16LE(0x0314, 4) // made by: Unix, 2.0
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(8, 10)
    central.writeUInt32LE(0x00210000, 12)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(packed.length, 20)
    central.writeUInt32LE(data.length, 24)
    central.writeUInt16LE(nameBytes.length, 28)
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38) // external attributes: a regular file, rw-r--r--
    central.writeUInt32LE(offset, 42)
    locals.push(local, nameBytes, packed)
    centrals.push(central, nameBytes)
    offset += local.length + nameBytes.length + packed.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0) // end of central directory signature
  end.writeUInt16LE(centrals.length / 2, 8)
  end.writeUInt16LE(centrals.length / 2, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}
