/**
 * The client's first binary packet (RFC 4253 §6) holding SSH_MSG_KEXINIT (RFC 4253 §7.1),
 * parsed with every length checked against the limits before it is used.
 */
import {
  BOOLEAN_FIELD,
  KEXINIT_COOKIE_LENGTH,
  KEXINIT_NAME_LISTS,
  MAX_INITIAL_PACKET,
  MIN_KEXINIT_PAYLOAD,
  MIN_PADDING,
  type NameListField,
  PACKET_LENGTH_FIELD,
  PADDING_LENGTH_FIELD,
  RESERVED_FIELD,
  SSH_MSG_KEXINIT,
  UNENCRYPTED_BLOCK,
} from './constants.ts'
import { WireError } from './wire-error.ts'

export type KexInit = Record<NameListField, string> & { first_kex_packet_follows: boolean }

export interface ParsedPacket {
  kexinit: KexInit
  /** Bytes of the whole packet, length field included. */
  length: number
}

/**
 * Parse the packet at the start of `buf`. Returns `undefined` while more bytes are needed
 * (and the announced length is acceptable); throws `WireError` otherwise.
 */
export function parseKexInitPacket(buf: Uint8Array): ParsedPacket | undefined {
  if (buf.length < PACKET_LENGTH_FIELD) return undefined
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  const packetLength = view.getUint32(0)
  const total = PACKET_LENGTH_FIELD + packetLength
  if (total > MAX_INITIAL_PACKET) {
    throw new WireError('packet_too_large', `initial packet of ${total} bytes exceeds ${MAX_INITIAL_PACKET}`)
  }
  if (total % UNENCRYPTED_BLOCK !== 0 || packetLength < PADDING_LENGTH_FIELD + MIN_PADDING) {
    throw new WireError('packet_length_invalid', `packet length ${packetLength} is not a valid unencrypted length`)
  }
  if (buf.length < total) return undefined
  const padding = buf[PACKET_LENGTH_FIELD]!
  const payloadLength = packetLength - PADDING_LENGTH_FIELD - padding
  if (padding < MIN_PADDING || payloadLength < 1) {
    throw new WireError('padding_invalid', `padding length ${padding} is invalid for a ${packetLength}-byte packet`)
  }
  const start = PACKET_LENGTH_FIELD + PADDING_LENGTH_FIELD
  const payload = buf.subarray(start, start + payloadLength)
  return { kexinit: parseKexInitPayload(payload), length: total }
}

/** Parse an SSH_MSG_KEXINIT payload (message number first). */
export function parseKexInitPayload(payload: Uint8Array): KexInit {
  if (payload[0] !== SSH_MSG_KEXINIT) {
    throw new WireError('not_kexinit', `first packet is message ${payload[0]}, expected KEXINIT (${SSH_MSG_KEXINIT})`)
  }
  if (payload.length < MIN_KEXINIT_PAYLOAD) throw new WireError('kexinit_malformed', 'KEXINIT payload is truncated')
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength)
  let at = 1 + KEXINIT_COOKIE_LENGTH
  const lists: Partial<Record<NameListField, string>> = {}
  for (const name of KEXINIT_NAME_LISTS) {
    if (at + 4 > payload.length) throw new WireError('kexinit_malformed', `KEXINIT is truncated before ${name}`)
    const length = view.getUint32(at)
    at += 4
    // Compare against what is left before slicing, so an oversized length can never be read.
    if (length > payload.length - at) {
      throw new WireError('kexinit_malformed', `${name} length ${length} runs past the end of the packet`)
    }
    lists[name] = nameList(payload.subarray(at, at + length), name)
    at += length
  }
  if (at + BOOLEAN_FIELD + RESERVED_FIELD > payload.length) {
    throw new WireError('kexinit_malformed', 'KEXINIT is truncated before first_kex_packet_follows')
  }
  // RFC 4251 §5: any non-zero boolean is TRUE. Bytes after `reserved` are ignored, as sshd does.
  const follows = payload[at] !== 0
  return { ...(lists as Record<NameListField, string>), first_kex_packet_follows: follows }
}

/**
 * RFC 4251 §5/§6: names are non-empty, printable US-ASCII without spaces, and the list is
 * joined by single commas. An empty list is allowed (the language lists usually are).
 */
function nameList(bytes: Uint8Array, name: NameListField): string {
  let previous = 0x2c
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    if (b <= 0x20 || b >= 0x7f) {
      throw new WireError('name_list_invalid', `${name} holds a byte outside printable ASCII`)
    }
    if (b === 0x2c && previous === 0x2c) throw new WireError('name_list_invalid', `${name} holds an empty name`)
    previous = b
  }
  if (bytes.length > 0 && previous === 0x2c) throw new WireError('name_list_invalid', `${name} ends with a comma`)
  return Buffer.from(bytes).toString('latin1')
}
