/**
 * ZIP bundle ingestion. yauzl parses the format; everything safety-related is checked
 * here (yauzl leaves it to the caller, see docs/RECIPES):
 *
 * - names: UTF-8 only, no traversal, absolute paths, backslashes or control characters,
 *   no duplicates including case and Unicode variants, no file/directory clashes;
 * - entry types: regular files and directories only (symlinks and devices refused);
 * - local headers must agree with the central directory (name, method, flags, and CRC-32
 *   and sizes unless a data descriptor carries them) and entries must not overlap (the
 *   overlapping-entry bomb);
 * - counts and sizes: at most `maxFiles` files; the expanded bytes are counted as they
 *   are inflated and the read stops at `maxBytes`, whatever the headers claim;
 * - every file's CRC-32 and size are verified against the central directory.
 *
 * Each file is written to a temp file while its SHA-256 is computed; the caller moves the
 * temp files into the blob store.
 */
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { crc32 } from 'node:zlib'
import { PRIVATE_FILE_MODE } from '@gatehouse/kit'
import yauzl, { type Entry, type ZipFile } from 'yauzl'
import { contentTypeFor } from './content-types.ts'
import { checkPath, collisionKey, decodeEntryName } from './names.ts'

export type BundleReason =
  | 'zip_corrupt'
  | 'invalid_name'
  | 'invalid_encoding'
  | 'path_traversal'
  | 'absolute_path'
  | 'duplicate_path'
  | 'symlink'
  | 'special_file'
  | 'encrypted'
  | 'unsupported_compression'
  | 'too_many_files'
  | 'too_large'
  | 'header_mismatch'
  | 'overlapping_entries'
  | 'size_mismatch'
  | 'crc_mismatch'
  | 'missing_entrypoint'
  | 'empty_bundle'
  | 'empty_body'

export class BundleError extends Error {
  override readonly name = 'BundleError'
  readonly reason: BundleReason
  constructor(reason: BundleReason, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.reason = reason
  }
}

export interface BundleLimits {
  maxBytes: number
  maxFiles: number
}

export interface ExtractedFile {
  path: string
  size: number
  sha256: string
  contentType: string
  /** Temp file holding the bytes; removed by the caller (or by `discard`). */
  tempPath: string
}

export interface ExtractedBundle {
  files: ExtractedFile[]
  totalBytes: number
  discard(): Promise<void>
}

const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000
const S_IFLNK = 0o120000
const HOST_UNIX = 3
const ENCRYPTED_FLAG = 1
const EXTRACT_CONCURRENCY = 8

interface Planned {
  entry: Entry
  path: string
}

/**
 * Validate a ZIP file and extract it into `tempDir`. Throws `BundleError` for anything the
 * rules refuse; never leaves temp files behind on error.
 */
export async function extractBundle(
  zipPath: string,
  entrypoint: string,
  limits: BundleLimits,
  tempDir: string,
): Promise<ExtractedBundle> {
  let zip: ZipFile
  try {
    zip = await yauzl.openPromise(zipPath, {
      lazyEntries: true,
      autoClose: false,
      decodeStrings: false,
      validateEntrySizes: true,
      strictFileNames: false,
    })
  } catch (err) {
    throw new BundleError('zip_corrupt', `not a readable ZIP file: ${(err as Error).message}`, { cause: err })
  }
  const written: ExtractedFile[] = []
  try {
    // Directories count too; refuse absurd directories before reading them.
    if (zip.entryCount > limits.maxFiles * 2 + 64) {
      throw new BundleError(
        'too_many_files',
        `the archive lists ${zip.entryCount} entries (limit ${limits.maxFiles} files)`,
      )
    }
    const planned = await planEntries(zip, limits)
    if (planned.length === 0) throw new BundleError('empty_bundle', 'the archive holds no files')
    if (!planned.some((p) => p.path === entrypoint)) {
      throw new BundleError('missing_entrypoint', `the entrypoint ${JSON.stringify(entrypoint)} is not in the archive`)
    }
    await checkLocalHeaders(zip, planned)
    // Several entries at a time (each waits on file creation); the byte budget is shared and
    // counted synchronously as bytes are inflated, so it holds across the parallel reads.
    const budget = { left: limits.maxBytes }
    const queue = planned.map((p, index) => ({ p, index }))
    let failed: unknown
    const worker = async () => {
      for (let job = queue.shift(); job && failed === undefined; job = queue.shift()) {
        try {
          written.push(await extractOne(zip, job.p, tempDir, job.index, budget))
        } catch (err) {
          failed ??= err
        }
      }
    }
    await Promise.all(Array.from({ length: EXTRACT_CONCURRENCY }, worker))
    if (failed !== undefined) throw failed
    written.sort((a, b) => (a.path < b.path ? -1 : 1))
    const total = written.reduce((n, f) => n + f.size, 0)
    return { files: written, totalBytes: total, discard: () => removeAll(written) }
  } catch (err) {
    await removeAll(written)
    if (err instanceof BundleError) throw err
    throw new BundleError('zip_corrupt', `the archive is damaged: ${(err as Error).message}`, { cause: err })
  } finally {
    zip.close()
  }
}

async function removeAll(files: ExtractedFile[]) {
  await Promise.all(files.map((f) => rm(f.tempPath, { force: true })))
}

/** Read the central directory and apply the name, type and count rules. */
async function planEntries(zip: ZipFile, limits: BundleLimits): Promise<Planned[]> {
  const files: Planned[] = []
  const keys = new Map<string, string>()
  const dirKeys = new Set<string>()
  let declared = 0
  for await (const entry of zip.eachEntry()) {
    const raw = entry.fileName as unknown as Buffer
    const decoded = decodeEntryName(raw, entry.generalPurposeBitFlag)
    if (typeof decoded !== 'string') throw new BundleError(decoded.reason, decoded.detail)
    const checked = checkPath(decoded)
    if ('reason' in checked) throw new BundleError(checked.reason, checked.detail)
    const mode = (entry.externalFileAttributes >>> 16) & 0xffff
    const type = mode & S_IFMT
    const unixHost = entry.versionMadeBy >>> 8 === HOST_UNIX
    if (type === S_IFLNK) throw new BundleError('symlink', `${JSON.stringify(checked.path)} is a symbolic link`)
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) {
      throw new BundleError('special_file', `${JSON.stringify(checked.path)} is not a regular file`)
    }
    if (unixHost && type === S_IFDIR && !checked.isDirectory) {
      throw new BundleError('special_file', `${JSON.stringify(checked.path)} is a directory without a trailing slash`)
    }
    // Every parent of a path is a directory; a file may not share a key with one.
    const key = collisionKey(checked.path)
    const parts = key.split('/')
    for (let i = 1; i < parts.length; i++) dirKeys.add(parts.slice(0, i).join('/'))
    if (checked.isDirectory) {
      dirKeys.add(key)
      continue
    }
    if (keys.has(key)) {
      throw new BundleError(
        'duplicate_path',
        `${JSON.stringify(checked.path)} appears twice (names differing only in case or Unicode form count as duplicates)`,
      )
    }
    keys.set(key, checked.path)
    if ((entry.generalPurposeBitFlag & ENCRYPTED_FLAG) !== 0) {
      throw new BundleError('encrypted', `${JSON.stringify(checked.path)} is encrypted`)
    }
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      throw new BundleError(
        'unsupported_compression',
        `${JSON.stringify(checked.path)} uses compression method ${entry.compressionMethod} (only stored and deflate)`,
      )
    }
    if (files.length + 1 > limits.maxFiles) {
      throw new BundleError('too_many_files', `the archive holds more than ${limits.maxFiles} files`)
    }
    declared += entry.uncompressedSize
    if (declared > limits.maxBytes) {
      throw new BundleError('too_large', `the expanded bundle exceeds ${limits.maxBytes} bytes`)
    }
    files.push({ entry, path: checked.path })
  }
  for (const key of keys.keys()) {
    if (dirKeys.has(key))
      throw new BundleError('duplicate_path', `${JSON.stringify(keys.get(key))} is both a file and a directory`)
  }
  return files
}

/**
 * Local headers must match the central directory, and entries may not overlap: the
 * "overlapping files" bomb points many central entries at one compressed stream.
 */
async function checkLocalHeaders(zip: ZipFile, planned: Planned[]) {
  const spans: { start: number; end: number; path: string }[] = []
  for (const p of planned) {
    const local = await zip.readLocalFileHeaderPromise(p.entry)
    const central = p.entry.fileName as unknown as Buffer
    if (!Buffer.from(local.fileName).equals(central)) {
      throw new BundleError('header_mismatch', `the local header of ${JSON.stringify(p.path)} names a different file`)
    }
    if (local.compressionMethod !== p.entry.compressionMethod || (local.generalPurposeBitFlag & ENCRYPTED_FLAG) !== 0) {
      throw new BundleError(
        'header_mismatch',
        `the local header of ${JSON.stringify(p.path)} disagrees with the central directory`,
      )
    }
    const disagreement = localSizesDisagree(local, p.entry)
    if (disagreement) {
      throw new BundleError(
        'header_mismatch',
        `the local header of ${JSON.stringify(p.path)} disagrees with the central directory on the ${disagreement}`,
      )
    }
    spans.push({
      start: p.entry.relativeOffsetOfLocalHeader,
      end: local.fileDataStart + p.entry.compressedSize,
      path: p.path,
    })
  }
  spans.sort((a, b) => a.start - b.start)
  for (let i = 1; i < spans.length; i++) {
    if (spans[i]!.start < spans[i - 1]!.end) {
      throw new BundleError(
        'overlapping_entries',
        `entries ${JSON.stringify(spans[i - 1]!.path)} and ${JSON.stringify(spans[i]!.path)} overlap`,
      )
    }
  }
}

const DATA_DESCRIPTOR_FLAG = 0x08
const ZIP64_MARKER = 0xffffffff
const ZIP64_EXTRA_ID = 0x0001

interface LocalHeader {
  generalPurposeBitFlag: number
  crc32: number
  compressedSize: number
  uncompressedSize: number
  extraField: Buffer
}

/**
 * The field a local header states differently from the central directory, or undefined.
 * With bit 3 set (APPNOTE 4.4.4) the CRC and sizes follow the data in a descriptor and
 * the local fields are zero, so only non-zero ones are compared; a 0xFFFFFFFF size is
 * read from the local zip64 extra field (APPNOTE 4.5.3: uncompressed, then compressed).
 */
function localSizesDisagree(local: LocalHeader, entry: Entry): string | undefined {
  const deferred = (local.generalPurposeBitFlag & DATA_DESCRIPTOR_FLAG) !== 0
  const differs = (stated: number, central: number) => !(deferred && stated === 0) && stated !== central
  if (differs(local.crc32 >>> 0, entry.crc32 >>> 0)) return 'CRC-32'
  let uncompressed = local.uncompressedSize
  let compressed = local.compressedSize
  if (uncompressed === ZIP64_MARKER || compressed === ZIP64_MARKER) {
    const zip64 = readZip64Sizes(local.extraField, uncompressed === ZIP64_MARKER, compressed === ZIP64_MARKER)
    if (!zip64) return 'sizes (no zip64 extra field)'
    uncompressed = zip64.uncompressed ?? uncompressed
    compressed = zip64.compressed ?? compressed
  }
  if (differs(uncompressed, entry.uncompressedSize)) return 'uncompressed size'
  if (differs(compressed, entry.compressedSize)) return 'compressed size'
  return undefined
}

function readZip64Sizes(
  extra: Buffer,
  wantUncompressed: boolean,
  wantCompressed: boolean,
): { uncompressed?: number; compressed?: number } | undefined {
  for (let i = 0; i + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(i)
    const size = extra.readUInt16LE(i + 2)
    const start = i + 4
    if (start + size > extra.length) return undefined
    if (id === ZIP64_EXTRA_ID) {
      let at = start
      const out: { uncompressed?: number; compressed?: number } = {}
      const next = () => {
        if (at + 8 > start + size) return undefined
        const v = Number(extra.readBigUInt64LE(at))
        at += 8
        return v
      }
      if (wantUncompressed) {
        const v = next()
        if (v === undefined) return undefined
        out.uncompressed = v
      }
      if (wantCompressed) {
        const v = next()
        if (v === undefined) return undefined
        out.compressed = v
      }
      return out
    }
    i = start + size
  }
  return undefined
}

async function extractOne(
  zip: ZipFile,
  p: Planned,
  tempDir: string,
  index: number,
  budget: { left: number },
): Promise<ExtractedFile> {
  const tempPath = join(tempDir, `f${index}`)
  const hash = createHash('sha256')
  let crc = 0
  let size = 0
  const expected = p.entry.uncompressedSize
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length
      budget.left -= chunk.length
      // Counted on the inflated bytes: a lying header cannot get past either bound.
      if (budget.left < 0)
        return done(
          new BundleError('too_large', `the expanded bundle exceeds the limit (at ${JSON.stringify(p.path)})`),
        )
      if (size > expected)
        return done(new BundleError('size_mismatch', `${JSON.stringify(p.path)} is larger than its header says`))
      crc = crc32(chunk, crc)
      hash.update(chunk)
      done(null, chunk)
    },
  })
  let stream: NodeJS.ReadableStream
  try {
    stream = await zip.openReadStreamPromise(p.entry)
  } catch (err) {
    throw new BundleError('zip_corrupt', `${JSON.stringify(p.path)} cannot be read: ${(err as Error).message}`, {
      cause: err,
    })
  }
  try {
    await pipeline(stream, meter, createWriteStream(tempPath, { mode: PRIVATE_FILE_MODE }))
  } catch (err) {
    await rm(tempPath, { force: true })
    if (err instanceof BundleError) throw err
    const message = (err as Error).message
    if (/too many bytes|too few bytes|expected/i.test(message)) {
      throw new BundleError('size_mismatch', `${JSON.stringify(p.path)} does not have the size its header says`, {
        cause: err,
      })
    }
    throw new BundleError('zip_corrupt', `${JSON.stringify(p.path)} cannot be inflated: ${message}`, { cause: err })
  }
  const file: ExtractedFile = {
    path: p.path,
    size,
    sha256: hash.digest('hex'),
    contentType: contentTypeFor(p.path),
    tempPath,
  }
  if (size !== expected) {
    await rm(tempPath, { force: true })
    throw new BundleError('size_mismatch', `${JSON.stringify(p.path)} does not have the size its header says`)
  }
  if (crc >>> 0 !== p.entry.crc32 >>> 0) {
    await rm(tempPath, { force: true })
    throw new BundleError('crc_mismatch', `${JSON.stringify(p.path)} fails its CRC-32 check`)
  }
  return file
}
