/**
 * What the aggregation needs from a raw request target, computed in memory: the path
 * (query dropped, percent-decoded for matching), whether it is a static asset (left out of
 * the error ratio, like CrowdSec's crawler rules), and a short hash for distinct-path
 * counting. The raw target itself goes nowhere.
 */

/** Extensions of static assets: images, fonts, styles, scripts, source maps, media. */
const STATIC = new Set([
  'png',
  'jpg',
  'jpeg',
  'gif',
  'webp',
  'avif',
  'svg',
  'ico',
  'bmp',
  'tif',
  'tiff',
  'woff',
  'woff2',
  'ttf',
  'otf',
  'eot',
  'css',
  'js',
  'mjs',
  'map',
  'mp4',
  'webm',
  'mp3',
  'ogg',
  'wav',
  'flac',
  'txt',
  'xml',
  'json',
  'webmanifest',
])

/** The path of a target: without query or fragment, and without scheme/authority for absolute-form targets. */
export function pathOf(target: string): string {
  let end = target.length
  const q = target.indexOf('?')
  if (q !== -1) end = q
  const h = target.indexOf('#')
  if (h !== -1 && h < end) end = h
  let path = target.slice(0, end)
  if (path.charCodeAt(0) !== 47 /* / */) {
    const scheme = path.indexOf('://')
    if (scheme !== -1) {
      const slash = path.indexOf('/', scheme + 3)
      path = slash === -1 ? '/' : path.slice(slash)
    }
  }
  return path
}

/** Percent-decode for matching; malformed escapes are kept as written (never throws). */
export function decodeForMatch(s: string): string {
  if (s.indexOf('%') === -1) return s
  try {
    return decodeURIComponent(s)
  } catch {
    return s.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
  }
}

export function isStaticAsset(path: string): boolean {
  const slash = path.lastIndexOf('/')
  const dot = path.lastIndexOf('.')
  if (dot <= slash || path.length - dot > 12) return false
  return STATIC.has(path.slice(dot + 1).toLowerCase())
}

/** FNV-1a 32-bit: the distinct-path hash (not reversible to the path, and only 2^32 values). */
export function pathHash(path: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < path.length; i++) {
    h ^= path.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
