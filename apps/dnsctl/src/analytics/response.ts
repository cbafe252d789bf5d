/**
 * What analytics reads from a DNS response (RFC 1035 §4.1): RCODE, the question's name and type,
 * and whether kresd's policy blocked it. kresd's DENY (our RPZ action) answers NXDOMAIN with a
 * synthesised SOA whose RNAME is `nobody.invalid.`; that marker tells a block from a real
 * NXDOMAIN. Pure function over bytes; every read is bounds-checked.
 */
export interface ResponseSummary {
  name: string
  type: number
  rcode: number
  blocked: boolean
}

const BLOCK_MARK = Buffer.from('\x06nobody\x07invalid\x00', 'latin1')

export function summariseResponse(msg: Uint8Array): ResponseSummary | undefined {
  if (msg.length < 12) return undefined
  const rcode = msg[3]! & 0x0f
  const qdcount = (msg[4]! << 8) | msg[5]!
  if (qdcount !== 1) return undefined
  const labels: string[] = []
  let at = 12
  let total = 0
  while (true) {
    if (at >= msg.length) return undefined
    const len = msg[at]!
    if (len === 0) {
      at++
      break
    }
    // Compression pointers or label types other than 0 do not occur in a question name.
    if (len > 63) return undefined
    if (at + 1 + len > msg.length) return undefined
    total += len + 1
    if (total > 255) return undefined
    labels.push(
      Buffer.from(msg.buffer, msg.byteOffset + at + 1, len)
        .toString('latin1')
        .toLowerCase(),
    )
    at += 1 + len
  }
  if (at + 4 > msg.length) return undefined
  const type = (msg[at]! << 8) | msg[at + 1]!
  const blocked = rcode === 3 && Buffer.from(msg.buffer, msg.byteOffset, msg.length).indexOf(BLOCK_MARK, at) !== -1
  return { name: labels.length === 0 ? '.' : labels.join('.'), type, rcode, blocked }
}
