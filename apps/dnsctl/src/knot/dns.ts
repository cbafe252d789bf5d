/**
 * The two DNS messages dnsctl sends: an SOA query to knotd (to verify that the authority
 * serves a new serial) and NOTIFY (RFC 1996) to the configured replicas.
 */
import { createSocket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import dnsPacket from 'dns-packet'

/** RFC 1996 §3.1: NOTIFY is opcode 4, with AA set and the zone's SOA as the question. */
const OPCODE_NOTIFY = 4

export interface Address {
  host: string
  port: number
}

export interface ExchangeOptions {
  /**
   * Connect the UDP socket to `to` first. The kernel then reports an ICMP port unreachable
   * (nothing listens on the address: the process is not running) as ECONNREFUSED at once,
   * where an unconnected socket never sees it and waits out the whole timeout. A host that
   * silently drops the query still costs the timeout. A connected socket also only accepts
   * datagrams whose source is `to`: an answer forged from any other address is dropped by the
   * kernel, which is what a DNS client should do (the random id is the only other check).
   */
  connect?: boolean
}

/**
 * The error of a refused query: it keeps the code ECONNREFUSED (callers tell "not running" from
 * "not answering" by it) and says in words what `recvmsg ECONNREFUSED` means.
 */
function refused(to: Address, err: NodeJS.ErrnoException): Error {
  return Object.assign(
    new Error(`${to.host}:${to.port} refused the query: nothing listens there (the server is not running)`, {
      cause: err,
    }),
    { code: err.code },
  )
}

export function exchange(
  to: Address,
  packet: Buffer,
  id: number,
  timeoutMs: number,
  options: ExchangeOptions = {},
): Promise<dnsPacket.DecodedPacket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(isIPv6(to.host) ? 'udp6' : 'udp4')
    const timer = setTimeout(() => {
      socket.close()
      reject(new Error(`no answer from ${to.host}:${to.port} within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on('message', (msg) => {
      let res: dnsPacket.DecodedPacket
      try {
        res = dnsPacket.decode(msg)
      } catch {
        return
      }
      if (res.id !== id) return
      clearTimeout(timer)
      socket.close()
      resolve(res)
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      socket.close()
      reject(err.code === 'ECONNREFUSED' ? refused(to, err) : err)
    })
    if (options.connect) socket.connect(to.port, to.host, () => socket.send(packet))
    else socket.send(packet, to.port, to.host)
  })
}

function newId(): number {
  return Math.floor(Math.random() * 65536)
}

export interface SoaAnswer {
  rcode: string
  authoritative: boolean
  serial: number | undefined
}

/**
 * Ask `server` for the SOA of `zone` (connected: a server that is not running rejects at once
 * with ECONNREFUSED instead of after `timeoutMs`).
 */
export async function querySoa(server: Address, zone: string, timeoutMs = 2000): Promise<SoaAnswer> {
  const id = newId()
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: 0,
    questions: [{ type: 'SOA', name: zone, class: 'IN' }],
  })
  const res = (await exchange(server, packet, id, timeoutMs, { connect: true })) as dnsPacket.DecodedPacket & {
    rcode?: string
  }
  const soa = (res.answers ?? []).find((a) => a.type === 'SOA') as dnsPacket.SoaAnswer | undefined
  return {
    rcode: res.rcode ?? 'NOERROR',
    authoritative: ((res.flags ?? 0) & dnsPacket.AUTHORITATIVE_ANSWER) !== 0,
    serial: soa?.data.serial,
  }
}

/**
 * Send NOTIFY for `zone` to one replica and wait for its answer; rejects with why it failed (a
 * replica that is not running at once, through the connected socket).
 */
export async function sendNotify(to: Address, zone: string, timeoutMs: number): Promise<void> {
  const id = newId()
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: (OPCODE_NOTIFY << 11) | dnsPacket.AUTHORITATIVE_ANSWER,
    questions: [{ type: 'SOA', name: zone, class: 'IN' }],
  })
  const res = (await exchange(to, packet, id, timeoutMs, { connect: true })) as dnsPacket.DecodedPacket & {
    rcode?: string
  }
  if ((res.rcode ?? 'NOERROR') !== 'NOERROR') throw new Error(`${to.host}:${to.port} answered ${res.rcode}`)
}
