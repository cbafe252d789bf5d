/**
 * Minimal DNS queries over UDP for tests (dns-packet), e.g. the SOA serial an
 * authoritative server answers with.
 */
import { createSocket } from 'node:dgram'
import dnsPacket from 'dns-packet'

export interface DnsAnswer {
  rcode: string
  authoritative: boolean
  answers: dnsPacket.Answer[]
}

/** Send one query to 127.0.0.1:port and return the decoded response (5 s timeout unless given). */
export function dnsQuery(
  port: number,
  name: string,
  type: dnsPacket.RecordType,
  host = '127.0.0.1',
  timeoutMs = 5000,
): Promise<DnsAnswer> {
  const id = Math.floor(Math.random() * 65535)
  // RD set, as every stub resolver sends it: kresd refuses non-recursive queries; Knot ignores the bit.
  const query = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
  })
  return new Promise((resolve, reject) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4')
    const timer = setTimeout(() => {
      socket.close()
      reject(new Error(`no DNS answer from ${host}:${port} for ${name} ${type}`))
    }, timeoutMs)
    socket.on('message', (msg) => {
      const res = dnsPacket.decode(msg) as dnsPacket.DecodedPacket & { rcode?: string }
      if (res.id !== id) return
      clearTimeout(timer)
      socket.close()
      resolve({
        rcode: res.rcode ?? 'NOERROR',
        authoritative: res.flag_aa,
        answers: res.answers ?? [],
      })
    })
    socket.on('error', (err) => {
      clearTimeout(timer)
      socket.close()
      reject(err)
    })
    socket.send(query, port, host)
  })
}

/** The SOA serial the server answers for `zone`, or undefined when it does not serve it (REFUSED/NXDOMAIN). */
export async function soaSerial(port: number, zone: string): Promise<number | undefined> {
  const res = await dnsQuery(port, zone, 'SOA')
  const soa = res.answers.find((a) => a.type === 'SOA') as dnsPacket.SoaAnswer | undefined
  return res.rcode === 'NOERROR' && soa ? soa.data.serial : undefined
}
