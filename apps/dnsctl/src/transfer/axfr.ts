/**
 * A full zone transfer (AXFR, RFC 5936) over TCP: one query, then length-prefixed messages
 * (RFC 1035 §4.2.2) until the closing SOA. Bounded by a deadline and a size cap; a REFUSED or
 * NOTAUTH answer is an error naming the server.
 */
import { connect } from 'node:net'
import dnsPacket from 'dns-packet'
import type { Address } from '../knot/dns.ts'

export const MAX_AXFR_BYTES = 512 * 1024 * 1024

export async function axfr(server: Address, zone: string, timeoutMs = 30_000): Promise<dnsPacket.Answer[]> {
  const id = Math.floor(Math.random() * 65536)
  const query = dnsPacket.streamEncode({
    type: 'query',
    id,
    flags: 0,
    questions: [{ type: 'AXFR', name: zone, class: 'IN' }],
  })
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, server.host)
    const records: dnsPacket.Answer[] = []
    let buf: Buffer = Buffer.alloc(0)
    let total = 0
    let soas = 0
    const fail = (why: string) => {
      clearTimeout(timer)
      socket.destroy()
      reject(new Error(`AXFR of ${zone} from ${server.host}:${server.port}: ${why}`))
    }
    const timer = setTimeout(() => fail(`no complete transfer within ${timeoutMs} ms`), timeoutMs)
    socket.on('error', (err) => fail(err.message))
    socket.on('connect', () => socket.write(query))
    socket.on('close', () => fail('connection closed before the closing SOA'))
    socket.on('data', (chunk: Buffer) => {
      total += chunk.length
      if (total > MAX_AXFR_BYTES) return fail(`more than ${MAX_AXFR_BYTES} bytes`)
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0)
        if (buf.length < 2 + len) break
        let msg: dnsPacket.DecodedPacket & { rcode?: string }
        try {
          msg = dnsPacket.decode(buf.subarray(2, 2 + len))
        } catch (err) {
          return fail(`undecodable message: ${(err as Error).message}`)
        }
        buf = buf.subarray(2 + len)
        if (msg.id !== id) continue
        if (msg.rcode && msg.rcode !== 'NOERROR') return fail(`answered ${msg.rcode}`)
        for (const a of msg.answers ?? []) {
          if (a.type === 'SOA') soas++
          // The closing SOA repeats the first; it is not a second record.
          if (!(a.type === 'SOA' && soas === 2)) records.push(a)
          if (soas === 2) {
            clearTimeout(timer)
            socket.removeAllListeners('close')
            socket.destroy()
            return resolve(records)
          }
        }
      }
    })
  })
}
