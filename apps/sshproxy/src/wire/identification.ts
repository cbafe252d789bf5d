/**
 * The client identification line (RFC 4253 §4.2), parsed from the start of a buffer.
 */
import { IDENTIFICATION_PREFIX, MAX_IDENTIFICATION_LINE } from './constants.ts'
import { WireError } from './wire-error.ts'

export interface Identification {
  /** The line without its CR LF, e.g. `SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u7`. */
  line: string
  /** `softwareversion`: up to the first space, e.g. `OpenSSH_9.2p1`. */
  softwareVersion: string
  /** Bytes the line occupies, terminator included. */
  length: number
}

const LF = 0x0a
const CR = 0x0d

/**
 * Parse the identification line at the start of `buf`. Returns `undefined` while the line is
 * incomplete and still within the length limit; throws `WireError` when it can never be valid.
 *
 * A client must send its identification first (only servers may send other lines before it,
 * RFC 4253 §4.2). The software version may contain `-` (JSch does) although the RFC forbids it:
 * sshd accepts such clients and so do we. Everything must be printable US-ASCII.
 */
export function parseIdentification(buf: Uint8Array): Identification | undefined {
  const limit = Math.min(buf.length, MAX_IDENTIFICATION_LINE)
  let end = -1
  for (let i = 0; i < limit; i++) {
    const b = buf[i]!
    if (b === LF) {
      end = i
      break
    }
    // CR only directly before LF; everything else printable ASCII (space allowed before comments).
    if (b === CR && i + 1 < buf.length && buf[i + 1] !== LF) {
      throw new WireError('identification_invalid', 'identification line has a stray carriage return')
    }
    if ((b < 0x20 || b > 0x7e) && b !== CR) {
      throw new WireError('identification_invalid', `identification line has a non-printable byte 0x${hex(b)}`)
    }
    if (i < IDENTIFICATION_PREFIX.length && b !== IDENTIFICATION_PREFIX.charCodeAt(i)) {
      if (i >= 4 && startsWithSsh(buf)) {
        throw new WireError('protocol_version_unsupported', 'client does not speak SSH protocol 2.0')
      }
      throw new WireError('identification_invalid', 'client did not start with an SSH identification line')
    }
  }
  if (end === -1) {
    if (buf.length >= MAX_IDENTIFICATION_LINE) {
      throw new WireError('identification_too_long', `identification line exceeds ${MAX_IDENTIFICATION_LINE} bytes`)
    }
    return undefined
  }
  const textEnd = end > 0 && buf[end - 1] === CR ? end - 1 : end
  const line = Buffer.from(buf.subarray(0, textEnd)).toString('latin1')
  if (line.length < IDENTIFICATION_PREFIX.length) {
    throw new WireError('identification_invalid', 'identification line is truncated')
  }
  const rest = line.slice(IDENTIFICATION_PREFIX.length)
  const space = rest.indexOf(' ')
  const softwareVersion = space === -1 ? rest : rest.slice(0, space)
  if (softwareVersion === '') throw new WireError('identification_invalid', 'identification has no software version')
  return { line, softwareVersion, length: end + 1 }
}

function startsWithSsh(buf: Uint8Array): boolean {
  return buf[0] === 0x53 && buf[1] === 0x53 && buf[2] === 0x48 && buf[3] === 0x2d
}

function hex(b: number): string {
  return b.toString(16).padStart(2, '0')
}
