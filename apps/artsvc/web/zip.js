// Just enough ZIP for the publish panel: list the file names of a chosen ZIP (to offer an
// entrypoint) and pack a dropped folder into a ZIP with stored entries. The server checks
// every rule again; these only help the user choose before uploading.

const EOCD = 0x06054b50
const CENTRAL = 0x02014b50

/** File names from the central directory ([] when the bytes are not a readable ZIP). */
export function zipFileNames(buffer) {
  const view = new DataView(buffer)
  const min = Math.max(0, buffer.byteLength - 22 - 0xffff)
  let eocd = -1
  for (let i = buffer.byteLength - 22; i >= min; i--) {
    if (view.getUint32(i, true) === EOCD) {
      eocd = i
      break
    }
  }
  if (eocd < 0) return []
  let count = view.getUint16(eocd + 10, true)
  let offset = view.getUint32(eocd + 16, true)
  // zip64: the real values sit in the zip64 end record, located just before.
  if ((count === 0xffff || offset === 0xffffffff) && eocd >= 20 && view.getUint32(eocd - 20, true) === 0x07064b50) {
    const rec = Number(view.getBigUint64(eocd - 12, true))
    if (rec + 56 <= buffer.byteLength && view.getUint32(rec, true) === 0x06064b50) {
      count = Number(view.getBigUint64(rec + 32, true))
      offset = Number(view.getBigUint64(rec + 48, true))
    }
  }
  const names = []
  const decoder = new TextDecoder()
  for (let n = 0; n < count && offset + 46 <= buffer.byteLength; n++) {
    if (view.getUint32(offset, true) !== CENTRAL) break
    const nameLength = view.getUint16(offset + 28, true)
    const extra = view.getUint16(offset + 30, true)
    const comment = view.getUint16(offset + 32, true)
    const name = decoder.decode(
      new Uint8Array(buffer, offset + 46, Math.min(nameLength, buffer.byteLength - offset - 46)),
    )
    if (!name.endsWith('/')) names.push(name)
    offset += 46 + nameLength + extra + comment
  }
  return names
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  return t
})()

function crc32(data) {
  let c = 0xffffffff
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/** A ZIP (stored entries, UTF-8 names) of [{ path, data: Uint8Array }], as a Blob. */
export function buildZip(files) {
  const encoder = new TextEncoder()
  const parts = []
  const central = []
  let offset = 0
  for (const file of files) {
    const name = encoder.encode(file.path)
    const crc = crc32(file.data)
    const local = new DataView(new ArrayBuffer(30))
    local.setUint32(0, 0x04034b50, true)
    local.setUint16(4, 20, true)
    local.setUint16(6, 0x0800, true) // UTF-8 names
    local.setUint32(14, crc, true)
    local.setUint32(18, file.data.length, true)
    local.setUint32(22, file.data.length, true)
    local.setUint16(26, name.length, true)
    parts.push(local, name, file.data)
    const entry = new DataView(new ArrayBuffer(46))
    entry.setUint32(0, CENTRAL, true)
    entry.setUint16(4, 20, true)
    entry.setUint16(6, 20, true)
    entry.setUint16(8, 0x0800, true)
    entry.setUint32(16, crc, true)
    entry.setUint32(20, file.data.length, true)
    entry.setUint32(24, file.data.length, true)
    entry.setUint16(28, name.length, true)
    entry.setUint32(42, offset, true)
    central.push(entry, name)
    offset += 30 + name.length + file.data.length
  }
  const size = central.reduce((n, p) => n + p.byteLength, 0)
  const end = new DataView(new ArrayBuffer(22))
  end.setUint32(0, EOCD, true)
  end.setUint16(8, files.length, true)
  end.setUint16(10, files.length, true)
  end.setUint32(12, size, true)
  end.setUint32(16, offset, true)
  return new Blob([...parts, ...central, end], { type: 'application/zip' })
}

/** Files of a dropped folder (FileSystemDirectoryEntry), paths relative to it. */
export async function readFolder(dirEntry) {
  const out = []
  const walk = async (dir, prefix) => {
    const reader = dir.createReader()
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject))
      if (batch.length === 0) break
      for (const entry of batch) {
        if (entry.isDirectory) await walk(entry, `${prefix}${entry.name}/`)
        else if (entry.isFile) {
          const file = await new Promise((resolve, reject) => entry.file(resolve, reject))
          out.push({ path: `${prefix}${entry.name}`, file })
        }
      }
    }
  }
  await walk(dirEntry, '')
  return out
}
