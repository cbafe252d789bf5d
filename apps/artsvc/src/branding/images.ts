/**
 * Branding images are trusted by their bytes, never by a declared type: PNG, JPEG or WebP
 * recognised from the magic numbers, at most 512 KiB each.
 */
import { errors } from '../errors.ts'

export const MAX_IMAGE_BYTES = 512 * 1024

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** The content type from the magic bytes, or undefined. */
export function sniffImage(data: Buffer): 'image/png' | 'image/jpeg' | 'image/webp' | undefined {
  if (data.length >= 8 && data.subarray(0, 8).equals(PNG)) return 'image/png'
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg'
  // RIFF <size> WEBP (RIFF container, the WebP container specification).
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP')
    return 'image/webp'
  return undefined
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

export function decodeImage(which: 'logo' | 'favicon', base64: string): { data: Buffer; contentType: string } {
  if ((base64.length / 4) * 3 > MAX_IMAGE_BYTES + 2) throw errors.branding_invalid(`${which} exceeds 512 KiB`)
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) throw errors.branding_invalid(`${which} is not valid base64`)
  const data = Buffer.from(base64, 'base64')
  if (data.length > MAX_IMAGE_BYTES) throw errors.branding_invalid(`${which} exceeds 512 KiB`)
  const contentType = sniffImage(data)
  if (!contentType) throw errors.branding_invalid(`${which} must be a PNG, JPEG or WebP image`)
  return { data, contentType }
}
