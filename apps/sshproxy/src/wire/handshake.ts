/**
 * Everything a client sends before encryption, as one pure function of the bytes received so
 * far: the identification line, then the KEXINIT packet. The caller appends each read to its
 * buffer and calls again, so any fragmentation gives the same result.
 */
import { PACKET_LENGTH_FIELD } from './constants.ts'
import { fingerprintOf } from './fingerprint.ts'
import { type Identification, parseIdentification } from './identification.ts'
import { type KexInit, parseKexInitPacket } from './kexinit.ts'
import { WireError } from './wire-error.ts'

export type HandshakeState =
  | {
      kind: 'more'
      /** Total buffered bytes before another parse can make progress (callers may wait for them). */
      need: number
    }
  | {
      kind: 'done'
      identification: Identification
      kexinit: KexInit
      fingerprint: string
      /** Bytes of identification + KEXINIT; anything after (Dropbear's guessed kex packet) is the caller's to forward. */
      consumed: number
    }
  | { kind: 'error'; error: WireError }

export function readClientHandshake(buf: Uint8Array): HandshakeState {
  try {
    const identification = parseIdentification(buf)
    if (!identification) return { kind: 'more', need: buf.length + 1 }
    const rest = buf.subarray(identification.length)
    const packet = parseKexInitPacket(rest)
    if (!packet) {
      const need = rest.length < PACKET_LENGTH_FIELD ? PACKET_LENGTH_FIELD : PACKET_LENGTH_FIELD + readUint32(rest)
      return { kind: 'more', need: identification.length + need }
    }
    return {
      kind: 'done',
      identification,
      kexinit: packet.kexinit,
      fingerprint: fingerprintOf(packet.kexinit),
      consumed: identification.length + packet.length,
    }
  } catch (err) {
    if (err instanceof WireError) return { kind: 'error', error: err }
    throw err
  }
}

function readUint32(buf: Uint8Array): number {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(0)
}
