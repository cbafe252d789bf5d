/**
 * RFC 1035 §5.1 <character-string>: text where `\X` stands for X and `\DDD` for the octet
 * with decimal value DDD. Held as bytes (UTF-8 of the text); written back quoted, with
 * printable ASCII kept and everything else as `\DDD`, the way Knot prints it.
 */
export class CharStringError extends Error {
  override readonly name = 'CharStringError'
}

const encoder = new TextEncoder()

/** Decode the escapes of a token into bytes. */
export function decodeCharString(text: string): Uint8Array {
  const out: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c !== '\\') {
      const code = c.charCodeAt(0)
      if (code < 0x80) out.push(code)
      else {
        // A whole code point (surrogate pairs included) as UTF-8.
        const cp = text.codePointAt(i)!
        const ch = String.fromCodePoint(cp)
        for (const b of encoder.encode(ch)) out.push(b)
        i += ch.length - 1
      }
      continue
    }
    const next = text[i + 1]
    if (next === undefined) throw new CharStringError('backslash at the end of a string')
    if (/[0-9]/.test(next)) {
      const digits = text.slice(i + 1, i + 4)
      if (!/^[0-9]{3}$/.test(digits)) throw new CharStringError(`\\DDD escape needs three digits, got \\${digits}`)
      const value = Number(digits)
      if (value > 255) throw new CharStringError(`\\${digits} is not an octet (0-255)`)
      out.push(value)
      i += 3
    } else {
      const cp = text.codePointAt(i + 1)!
      const ch = String.fromCodePoint(cp)
      for (const b of encoder.encode(ch)) out.push(b)
      i += ch.length
    }
  }
  return Uint8Array.from(out)
}

/** Write bytes as a quoted character-string. */
export function encodeCharString(bytes: Uint8Array): string {
  let out = '"'
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`
    else if (b >= 0x20 && b <= 0x7e) out += String.fromCharCode(b)
    else out += `\\${String(b).padStart(3, '0')}`
  }
  return `${out}"`
}
