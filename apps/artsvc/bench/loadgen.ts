/**
 * A lean closed-loop HTTP/1.1 load generator: raw keep-alive TCP connections, one request
 * in flight on each, requests pre-built as bytes once, responses parsed only as far as
 * needed (status line, Content-Length, body length). It costs the bench process far less
 * CPU per request than an HTTP client library would, which matters on a 2-core machine
 * where it shares the CPUs with the server under test. Identical for every server: the
 * only per-server input is the origin and the request bytes. A connection the server
 * closes (e.g. a keep-alive request limit) is reopened; a response without
 * Content-Length, a non-200 status or a socket error counts as an error.
 */
import { connect, type Socket } from 'node:net'

export interface LoadResult {
  requests: number
  errors: number
  seconds: number
  rps: number
}

const CRLF2 = Buffer.from('\r\n\r\n')

export function buildRequests(paths: string[], host: string, headers: Record<string, string> = {}): Buffer[] {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')
  return paths.map((p) => Buffer.from(`GET ${p} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`, 'latin1'))
}

export async function load(
  target: { host: string; port: number },
  requests: Buffer[],
  options: { connections: number; seconds: number },
): Promise<LoadResult> {
  let ok = 0
  let errors = 0
  let next = 0
  const started = performance.now()
  const deadline = started + options.seconds * 1000

  const connection = () =>
    new Promise<void>((resolve) => {
      let socket: Socket
      let buf: Buffer = Buffer.alloc(0)
      let bodyLeft = -1 // -1: reading headers
      let status = 0
      let finished = false

      const finish = () => {
        if (finished) return
        finished = true
        socket.destroy()
        resolve()
      }
      const send = () => {
        if (performance.now() >= deadline) return finish()
        socket.write(requests[next++ % requests.length]!)
      }
      const open = () => {
        buf = Buffer.alloc(0)
        bodyLeft = -1
        socket = connect({ host: target.host, port: target.port, noDelay: true })
        socket.on('connect', send)
        socket.on('data', onData)
        socket.on('error', () => {
          errors++
        })
        socket.on('close', () => {
          if (finished) return
          if (performance.now() >= deadline) return finish()
          open()
        })
      }
      const onData = (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
        for (;;) {
          if (bodyLeft < 0) {
            const end = buf.indexOf(CRLF2)
            if (end < 0) return
            const head = buf.toString('latin1', 0, end)
            status = Number(head.slice(9, 12))
            const m = /\r\ncontent-length:\s*(\d+)/i.exec(head)
            if (!m) {
              errors++
              socket.destroy()
              return
            }
            bodyLeft = Number(m[1])
            buf = buf.subarray(end + 4)
          }
          if (buf.length < bodyLeft) {
            bodyLeft -= buf.length
            buf = Buffer.alloc(0)
            return
          }
          buf = buf.subarray(bodyLeft)
          bodyLeft = -1
          if (status === 200) ok++
          else errors++
          send()
          if (finished || buf.length === 0) return
        }
      }
      open()
    })

  await Promise.all(Array.from({ length: options.connections }, connection))
  const seconds = (performance.now() - started) / 1000
  return { requests: ok, errors, seconds, rps: ok / seconds }
}
