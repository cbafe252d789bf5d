/**
 * Path rules for files inside a bundle (and for entrypoints). Pure functions over the raw
 * ZIP name bytes, fuzzed in test/bundle-names.test.ts.
 */

/** Why a name was refused; `reason` is a stable snake_case word for clients. */
export interface NameProblem {
  reason: 'invalid_name' | 'path_traversal' | 'absolute_path' | 'invalid_encoding'
  detail: string
}

const MAX_NAME_BYTES = 1024
const MAX_SEGMENT_BYTES = 255
const UTF8_FLAG = 1 << 11
const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Decode a ZIP entry name. Names flagged UTF-8 (general purpose bit 11) must be valid
 * UTF-8; unflagged names must be ASCII or valid UTF-8 (what current tools write). CP437
 * names with high bytes are refused rather than guessed.
 */
export function decodeEntryName(raw: Uint8Array, flags: number): string | NameProblem {
  if (raw.length > MAX_NAME_BYTES)
    return { reason: 'invalid_name', detail: `a name is longer than ${MAX_NAME_BYTES} bytes` }
  try {
    return utf8.decode(raw)
  } catch {
    return {
      reason: 'invalid_encoding',
      detail:
        (flags & UTF8_FLAG) !== 0 ? 'a name flagged UTF-8 is not valid UTF-8' : 'a name is neither ASCII nor UTF-8',
    }
  }
}

/**
 * Check a decoded name and return its canonical form (Unicode NFC, no trailing slash) or
 * the problem. Directories end with `/` in ZIP files; `isDirectory` says whether it did.
 */
export function checkPath(name: string): { path: string; isDirectory: boolean } | NameProblem {
  const show = JSON.stringify(name.slice(0, 80))
  if (name.length === 0) return { reason: 'invalid_name', detail: 'an entry has an empty name' }
  if (/[\u0000-\u001f\u007f]/.test(name))
    return { reason: 'invalid_name', detail: `name ${show} holds control characters` }
  if (name.includes('\\')) return { reason: 'invalid_name', detail: `name ${show} holds a backslash` }
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name))
    return { reason: 'absolute_path', detail: `name ${show} is absolute` }
  const isDirectory = name.endsWith('/')
  const body = isDirectory ? name.slice(0, -1) : name
  const segments = body.split('/')
  for (const seg of segments) {
    if (seg === '..') return { reason: 'path_traversal', detail: `name ${show} leaves the bundle` }
    if (seg === '' || seg === '.') return { reason: 'invalid_name', detail: `name ${show} has an empty or "." segment` }
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES)
      return { reason: 'invalid_name', detail: `name ${show} has a segment over 255 bytes` }
  }
  const path = body.normalize('NFC')
  // A name that only becomes ".." after normalisation would still be traversal.
  if (path.split('/').some((s) => s === '..' || s === '.'))
    return { reason: 'path_traversal', detail: `name ${show} leaves the bundle` }
  return { path, isDirectory }
}

/**
 * The key two names collide on: case-insensitive and compatibility-normalised, so
 * `Index.html` and `index.html`, or a precomposed and a decomposed `é`, are duplicates
 * (they would overwrite each other on case-insensitive or normalising file systems).
 */
export function collisionKey(path: string): string {
  return path.normalize('NFKC').toLowerCase().normalize('NFKC')
}

/** Check a caller-given entrypoint (same rules as file names; never a directory). */
export function checkEntrypoint(value: string): string | NameProblem {
  const r = checkPath(value)
  if ('reason' in r) return r
  if (r.isDirectory) return { reason: 'invalid_name', detail: 'must name a file, not a directory' }
  return r.path
}
