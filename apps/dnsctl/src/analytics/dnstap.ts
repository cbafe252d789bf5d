/**
 * The few dnstap fields analytics needs (dnstap.proto, https://dnstap.info), from a minimal
 * protobuf reader of our own:
 *
 *   Dnstap   15 type (enum, MESSAGE = 1), 14 message (Message)
 *   Message   1 type (CLIENT_QUERY = 5, CLIENT_RESPONSE = 6), 4 query_address (bytes),
 *            8 query_time_sec (uint64), 14 response_message (bytes, DNS wire format)
 *
 * Unknown fields are skipped by wire type; every length is checked against what is left.
 */

export class DnstapError extends Error {
  override readonly name = 'DnstapError'
}

export const MESSAGE_CLIENT_RESPONSE = 6

export interface DnstapMessage {
  type: number
  queryAddress: Uint8Array | undefined
  queryTimeSec: number | undefined
  responseMessage: Uint8Array | undefined
}

function varint(buf: Uint8Array, pos: { at: number }): number {
  let result = 0
  let mult = 1
  for (let i = 0; i < 10; i++) {
    if (pos.at >= buf.length) throw new DnstapError('truncated varint')
    const b = buf[pos.at++]!
    result += (b & 0x7f) * mult
    if ((b & 0x80) === 0) return result
    mult *= 128
  }
  throw new DnstapError('varint longer than 10 bytes')
}

/** Walk the fields of one protobuf message; `onField` gets varints as numbers and bytes as views. */
function fields(buf: Uint8Array, onField: (field: number, value: number | Uint8Array) => void) {
  const pos = { at: 0 }
  while (pos.at < buf.length) {
    const key = varint(buf, pos)
    const field = Math.floor(key / 8)
    const wire = key & 7
    if (wire === 0) onField(field, varint(buf, pos))
    else if (wire === 2) {
      const len = varint(buf, pos)
      if (len > buf.length - pos.at) throw new DnstapError(`field ${field} length ${len} exceeds the message`)
      onField(field, buf.subarray(pos.at, pos.at + len))
      pos.at += len
    } else if (wire === 1) {
      if (buf.length - pos.at < 8) throw new DnstapError('truncated fixed64')
      pos.at += 8
    } else if (wire === 5) {
      if (buf.length - pos.at < 4) throw new DnstapError('truncated fixed32')
      pos.at += 4
    } else throw new DnstapError(`unsupported wire type ${wire}`)
  }
}

/** Decode one dnstap frame; undefined when it holds no Message. */
export function decodeDnstap(frame: Uint8Array): DnstapMessage | undefined {
  let message: Uint8Array | undefined
  fields(frame, (f, v) => {
    if (f === 14 && typeof v !== 'number') message = v
  })
  if (!message) return undefined
  const out: DnstapMessage = { type: 0, queryAddress: undefined, queryTimeSec: undefined, responseMessage: undefined }
  fields(message, (f, v) => {
    if (f === 1 && typeof v === 'number') out.type = v
    else if (f === 4 && typeof v !== 'number') out.queryAddress = v
    else if (f === 8 && typeof v === 'number') out.queryTimeSec = v
    else if (f === 14 && typeof v !== 'number') out.responseMessage = v
  })
  return out
}
