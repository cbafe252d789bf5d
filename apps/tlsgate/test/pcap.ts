/**
 * A classic pcap file (libpcap 2.4, Ethernet link type) built in memory around TCP payloads,
 * so captured ClientHellos can be handed to Wireshark's dissector without capture privileges:
 * each payload is one packet of a synthetic Ethernet / IPv4 / TCP frame from 10.0.0.1:<port>
 * to 10.0.0.2:443. The IPv4 header checksum is real; the TCP checksum is left zero (tshark
 * does not verify it by default).
 */

const PCAP_MAGIC = 0xa1b2c3d4
const LINKTYPE_ETHERNET = 1
const ETHERTYPE_IPV4 = 0x0800
const IPPROTO_TCP = 6

function ipv4Checksum(header: Buffer): number {
  let sum = 0
  for (let i = 0; i < header.length; i += 2) sum += header.readUInt16BE(i)
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16)
  return ~sum & 0xffff
}

/** One Ethernet frame carrying `payload` in a TCP segment (PSH+ACK) from `srcPort` to 443. */
export function tcpFrame(payload: Buffer, srcPort: number): Buffer {
  const eth = Buffer.alloc(14)
  Buffer.from([0x02, 0, 0, 0, 0, 0x02]).copy(eth, 0) // destination MAC (locally administered)
  Buffer.from([0x02, 0, 0, 0, 0, 0x01]).copy(eth, 6) // source MAC
  eth.writeUInt16BE(ETHERTYPE_IPV4, 12)
  const tcp = Buffer.alloc(20)
  tcp.writeUInt16BE(srcPort, 0)
  tcp.writeUInt16BE(443, 2)
  tcp.writeUInt32BE(1, 4) // sequence number
  tcp.writeUInt32BE(1, 8) // acknowledgement number
  tcp[12] = 5 << 4 // data offset: 5 words, no options
  tcp[13] = 0x18 // PSH, ACK
  tcp.writeUInt16BE(65535, 14) // window
  const ip = Buffer.alloc(20)
  ip[0] = 0x45 // version 4, header length 5 words
  const total = ip.length + tcp.length + payload.length
  if (total > 0xffff) throw new Error(`payload of ${payload.length} bytes does not fit one IPv4 packet`)
  ip.writeUInt16BE(total, 2)
  ip[6] = 0x40 // don't fragment
  ip[8] = 64 // TTL
  ip[9] = IPPROTO_TCP
  Buffer.from([10, 0, 0, 1]).copy(ip, 12)
  Buffer.from([10, 0, 0, 2]).copy(ip, 16)
  ip.writeUInt16BE(ipv4Checksum(ip), 10)
  return Buffer.concat([eth, ip, tcp, payload])
}

/** A pcap file with one packet per frame, one second apart. */
export function pcapFile(frames: readonly Buffer[]): Buffer {
  const header = Buffer.alloc(24)
  header.writeUInt32LE(PCAP_MAGIC, 0)
  header.writeUInt16LE(2, 4)
  header.writeUInt16LE(4, 6)
  header.writeUInt32LE(0, 8) // thiszone
  header.writeUInt32LE(0, 12) // sigfigs
  header.writeUInt32LE(262_144, 16) // snaplen
  header.writeUInt32LE(LINKTYPE_ETHERNET, 20)
  const packets = frames.map((frame, i) => {
    const record = Buffer.alloc(16)
    record.writeUInt32LE(1_700_000_000 + i, 0)
    record.writeUInt32LE(0, 4)
    record.writeUInt32LE(frame.length, 8)
    record.writeUInt32LE(frame.length, 12)
    return Buffer.concat([record, frame])
  })
  return Buffer.concat([header, ...packets])
}
