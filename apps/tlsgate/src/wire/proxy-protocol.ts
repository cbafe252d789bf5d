/**
 * PROXY protocol version 2 header (haproxy's proxy-protocol.txt, section 2.2), sent to the
 * backend before the client's bytes so the web server logs the real client address
 * (nginx: `listen ... proxy_protocol;` and `$proxy_protocol_addr`).
 *
 *   12-byte signature \r\n\r\n\0\r\nQUIT\n | ver_cmd 0x21 (v2, PROXY) | family 0x11 (TCP/IPv4)
 *   or 0x21 (TCP/IPv6) | uint16 length | src addr | dst addr | src port | dst port
 */
import { isIPv4 } from 'node:net'
import { parseIp } from '@gatehouse/kit/net.ts'

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a])
const V2_PROXY = 0x21
const TCP4 = 0x11
const TCP6 = 0x21

/** 16 bytes of an address; IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`). */
function bytes16(ip: string): number[] {
  const parsed = parseIp(ip)
  return parsed.kind() === 'ipv4' ? [...Array(10).fill(0), 0xff, 0xff, ...parsed.toByteArray()] : parsed.toByteArray()
}

/**
 * The header for a TCP connection from `src` to `dst` (the gate's listening address). Both
 * IPv4: the 12-byte IPv4 block; otherwise both as IPv6.
 *
 * @example backend.write(proxyV2Header({ ip: '203.0.113.7', port: 51000 }, { ip: '192.0.2.1', port: 443 }))
 */
export function proxyV2Header(src: { ip: string; port: number }, dst: { ip: string; port: number }): Buffer {
  const v4 = isIPv4(src.ip) && isIPv4(dst.ip)
  const addresses = v4
    ? [...parseIp(src.ip).toByteArray(), ...parseIp(dst.ip).toByteArray()]
    : [...bytes16(src.ip), ...bytes16(dst.ip)]
  const body = Buffer.alloc(addresses.length + 4)
  Buffer.from(addresses).copy(body)
  body.writeUInt16BE(src.port, addresses.length)
  body.writeUInt16BE(dst.port, addresses.length + 2)
  const head = Buffer.from([V2_PROXY, v4 ? TCP4 : TCP6, body.length >> 8, body.length & 0xff])
  return Buffer.concat([SIGNATURE, head, body])
}
