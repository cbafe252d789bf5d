/**
 * Zone text from bytes. Zone files are UTF-8 here (RFC 1035 §5.1 lets a character-string hold
 * any octet, written `\DDD`); bytes that are not UTF-8, say a Latin-1 file, are refused with the
 * line they are on. A lenient decoder turned them into U+FFFD, and the zone published other
 * octets than the file held.
 */
export class NotUtf8Error extends Error {
  override readonly name = 'NotUtf8Error'
  /** 1-based line of the first byte that is not UTF-8. */
  readonly line: number
  constructor(line: number) {
    super('not UTF-8 text; write other octets as \\DDD escapes (e.g. "caf\\233")')
    this.line = line
  }
}

/** `bytes` as text; throws NotUtf8Error naming the first line that is not UTF-8. */
export function decodeZoneBytes(bytes: Uint8Array): string {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  try {
    return decoder.decode(bytes)
  } catch {
    let start = 0
    for (let line = 1; ; line++) {
      const end = bytes.indexOf(0x0a, start)
      try {
        decoder.decode(bytes.subarray(start, end === -1 ? bytes.length : end))
      } catch {
        throw new NotUtf8Error(line)
      }
      // Unreachable in practice (some line must fail); keeps the loop total.
      if (end === -1) throw new NotUtf8Error(line)
      start = end + 1
    }
  }
}
