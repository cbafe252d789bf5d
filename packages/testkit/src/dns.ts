/**
 * Minimal DNS queries over UDP for tests (dns-packet), e.g. the SOA serial an
 * authoritative server answers with.
 */
import { createSocket, type Socket } from 'node:dgram'
import dnsPacket from 'dns-packet'

export interface DnsAnswer {
  rcode: string
  authoritative: boolean
  answers: dnsPacket.Answer[]
}

/**
 * Send one query to 127.0.0.1:port and return the decoded response (5 s timeout unless given).
 * With `resendMs`, it sends the query again at that interval until an answer or the deadline, as
 * a stub resolver does, each time from a new socket: UDP may be dropped, and a resolver sharing
 * its port between processes (SO_REUSEPORT) hashes a new source port to another process, so one
 * busy process (reloading a blocklist on a loaded machine) does not fail the query. Tests that
 * count the queries a server saw leave it off.
 */
export function dnsQuery(
  port: number,
  name: string,
  type: dnsPacket.RecordType,
  host = '127.0.0.1',
  timeoutMs = 5000,
  resendMs = 0,
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
    const sockets: Socket[] = []
    let settled = false
    const finish = (outcome: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      clearInterval(resend)
      for (const socket of sockets) socket.close()
      outcome()
    }
    const send = () => {
      const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4')
      sockets.push(socket)
      socket.on('message', (msg) => {
        const res = dnsPacket.decode(msg) as dnsPacket.DecodedPacket & { rcode?: string }
        if (res.id !== id) return
        finish(() => resolve({ rcode: res.rcode ?? 'NOERROR', authoritative: res.flag_aa, answers: res.answers ?? [] }))
      })
      socket.on('error', (err) => finish(() => reject(err)))
      socket.send(query, port, host)
    }
    const deadline = setTimeout(
      () => finish(() => reject(new Error(`no DNS answer from ${host}:${port} for ${name} ${type}`))),
      timeoutMs,
    )
    const resend = resendMs > 0 ? setInterval(send, resendMs) : undefined
    send()
  })
}

/** The SOA serial the server answers for `zone`, or undefined when it does not serve it (REFUSED/NXDOMAIN). */
export async function soaSerial(port: number, zone: string): Promise<number | undefined> {
  const res = await dnsQuery(port, zone, 'SOA')
  const soa = res.answers.find((a) => a.type === 'SOA') as dnsPacket.SoaAnswer | undefined
  return res.rcode === 'NOERROR' && soa ? soa.data.serial : undefined
}
