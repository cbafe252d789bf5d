/**
 * Frame Streams (the transport of dnstap; https://github.com/farsightsecurity/fstrm,
 * "Frame Streams Control Frames"), reader side of a bidirectional stream:
 *
 *   data frame     u32 length (> 0) | payload
 *   control frame  u32 0 | u32 control length | u32 control type | fields
 *   field          u32 field type (1 = content type) | u32 field length | bytes
 *   control types  ACCEPT 1, START 2, STOP 3, READY 4, FINISH 5
 *
 * The writer (kresd) sends READY with its content types; we answer ACCEPT with the one we
 * take; it sends START, data frames, and STOP, which we answer with FINISH. All lengths are
 * checked against a maximum before anything is read.
 */

export const CONTENT_TYPE = 'protobuf:dnstap.Dnstap'
export const CONTROL = { ACCEPT: 1, START: 2, STOP: 3, READY: 4, FINISH: 5 } as const
const FIELD_CONTENT_TYPE = 1
export const MAX_CONTROL_LENGTH = 512
export const MAX_FRAME_LENGTH = 1 << 20

export class FrameStreamError extends Error {
  override readonly name = 'FrameStreamError'
}

export type FrameEvent = { kind: 'control'; type: number; contentTypes: string[] } | { kind: 'data'; payload: Buffer }

/** A control frame with the given content type fields (what the reader sends back). */
export function controlFrame(type: number, contentTypes: string[] = []): Buffer {
  const fields = contentTypes.map((t) => {
    const b = Buffer.from(t, 'utf8')
    const f = Buffer.alloc(8 + b.length)
    f.writeUInt32BE(FIELD_CONTENT_TYPE, 0)
    f.writeUInt32BE(b.length, 4)
    b.copy(f, 8)
    return f
  })
  const body = Buffer.concat([Buffer.alloc(4), ...fields])
  body.writeUInt32BE(type, 0)
  const head = Buffer.alloc(8)
  head.writeUInt32BE(0, 0)
  head.writeUInt32BE(body.length, 4)
  return Buffer.concat([head, body])
}

function parseControl(body: Buffer): FrameEvent {
  if (body.length < 4) throw new FrameStreamError(`control frame of ${body.length} bytes has no type`)
  const type = body.readUInt32BE(0)
  const contentTypes: string[] = []
  let at = 4
  while (at < body.length) {
    if (body.length - at < 8) throw new FrameStreamError('truncated control field header')
    const fieldType = body.readUInt32BE(at)
    const len = body.readUInt32BE(at + 4)
    if (len > body.length - at - 8) throw new FrameStreamError(`control field length ${len} exceeds the frame`)
    if (fieldType === FIELD_CONTENT_TYPE) contentTypes.push(body.toString('utf8', at + 8, at + 8 + len))
    at += 8 + len
  }
  return { kind: 'control', type, contentTypes }
}

/** Incremental decoder: feed chunks as they arrive, get whole frames out. */
export class FrameDecoder {
  #buf: Buffer = Buffer.alloc(0)
  readonly maxFrame: number
  constructor(maxFrame = MAX_FRAME_LENGTH) {
    this.maxFrame = maxFrame
  }

  push(chunk: Buffer): FrameEvent[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk])
    const out: FrameEvent[] = []
    let at = 0
    const buf = this.#buf
    while (buf.length - at >= 4) {
      const len = buf.readUInt32BE(at)
      if (len > 0) {
        if (len > this.maxFrame) throw new FrameStreamError(`data frame of ${len} bytes exceeds ${this.maxFrame}`)
        if (buf.length - at - 4 < len) break
        out.push({ kind: 'data', payload: buf.subarray(at + 4, at + 4 + len) })
        at += 4 + len
        continue
      }
      if (buf.length - at < 8) break
      const clen = buf.readUInt32BE(at + 4)
      if (clen > MAX_CONTROL_LENGTH)
        throw new FrameStreamError(`control frame of ${clen} bytes exceeds ${MAX_CONTROL_LENGTH}`)
      if (buf.length - at - 8 < clen) break
      out.push(parseControl(buf.subarray(at + 8, at + 8 + clen)))
      at += 8 + clen
    }
    this.#buf = at === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at))
    return out
  }
}
