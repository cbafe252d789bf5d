/**
 * Readers of bench/stream.ts, in a worker thread (bench/stream.ts starts several, each with
 * a share of the readers, so the readers are not held to one core's event loop).
 *
 * Each reader is a raw TCP connection that sends the stream request, checks the `200` status
 * line and then reads the Server-Sent Events body: for every `notification` event it takes
 * the hook's `seq:N` from the title and notes the time the bytes arrived (the time the read
 * returned in this thread, `performance.timeOrigin + now()`, comparable with the sender
 * thread's accept times). No http client: its parser handled every body chunk again and
 * built a slice per chunk, which cost the shared cores more than the event scan itself. No
 * UTF-8 decoding and no string per event either: the scan looks for the bytes of the title
 * `seq:` and parses the digits after them.
 *
 * A reader that receives an event twice counts a duplicate; bench/stream.ts checks that every
 * reader received every event exactly once.
 *
 * Messages in: {type:'count'}, {type:'report', accepted: Float64Array, sent: Float64Array}.
 * Messages out: {type:'connected'}, {type:'count', events, cpu},
 *   {type:'report', fromAccept: Uint32Array, fromSend: Uint32Array, missing, duplicates, cpu}
 *   (histograms in 0.1 ms buckets, the last bucket catching everything above).
 */
import net from 'node:net'
import { parentPort, workerData } from 'node:worker_threads'

const { host, port, readers, total, bucketMs, buckets } = workerData as {
  host: string
  port: number
  readers: number
  total: number
  bucketMs: number
  buckets: number
}
/** Receive time of seq s at reader r: received[s * readers + r] (0: not yet). */
const received = new Float64Array(total * readers)
let events = 0
let duplicates = 0

/**
 * Each notification event carries its hook's `seq:N` in its title (and in its body and
 * text, which the needle's `le":"` leaves out). The needle starts with a letter that is rare
 * in the event's JSON: `"title":"seq:` took the scan three times as long (it stops at
 * every quote).
 */
const NEEDLE = Buffer.from('le":"seq:')
const HEAD_END = Buffer.from('\r\n\r\n')
const REQUEST = `GET /api/v1/stream HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\n\r\n`
const READY = Buffer.from('event: ready')

function cpuSeconds(): number {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1e6
}

/**
 * One buffer for every read of this thread (net's `onread`: no Buffer, stream event or
 * listener call per read). A read is handled before the next one starts, so sharing it is
 * safe; what a reader keeps for the next read (`carry`) is copied out.
 */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024)

function open(r: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let carry: Buffer | undefined
    let head = true
    let ready = false
    const onRead = (n: number) => {
      const at = performance.timeOrigin + performance.now()
      let buf = carry ? Buffer.concat([carry, READ_BUFFER.subarray(0, n)]) : READ_BUFFER.subarray(0, n)
      carry = undefined
      if (head) {
        const end = buf.indexOf(HEAD_END)
        if (end < 0) {
          carry = Buffer.from(buf)
          return
        }
        const status = buf.toString('latin1', 0, buf.indexOf('\r\n'))
        if (!status.startsWith('HTTP/1.1 200 ')) return reject(new Error(`stream: ${status}`))
        head = false
        buf = buf.subarray(end + HEAD_END.length)
      }
      if (!ready) {
        // The stream is live (attached to the hub) once `ready` arrives.
        if (buf.indexOf(READY) < 0) {
          carry = Buffer.from(buf)
          return
        }
        ready = true
        resolve()
      }
      let from = 0
      for (let i = buf.indexOf(NEEDLE, from); i >= 0; i = buf.indexOf(NEEDLE, from)) {
        let p = i + NEEDLE.length
        let seq = 0
        while (p < buf.length && buf[p]! >= 0x30 && buf[p]! <= 0x39) seq = seq * 10 + buf[p++]! - 0x30
        if (p === buf.length) {
          carry = Buffer.from(buf.subarray(i)) // the digits may go on in the next read
          return
        }
        events++
        if (seq < total) {
          const k = seq * readers + r
          if (received[k]! > 0) duplicates++
          else received[k] = at
        }
        from = p
      }
      // Keep only a cut-off start of the needle (events end in "\n\n", so almost never).
      for (let k = Math.min(NEEDLE.length - 1, buf.length - from); k > 0; k--) {
        if (buf.subarray(buf.length - k).equals(NEEDLE.subarray(0, k))) {
          carry = Buffer.from(buf.subarray(buf.length - k))
          break
        }
      }
    }
    const socket = net.connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (n) => {
          onRead(n)
          return true
        },
      },
    })
    socket.on('error', reject)
    socket.on('connect', () => socket.write(REQUEST))
  })
}

for (let r = 0; r < readers; r++) await open(r)
parentPort!.postMessage({ type: 'connected' })
parentPort!.on('message', (m: { type: string; accepted?: Float64Array; sent?: Float64Array }) => {
  if (m.type === 'count') parentPort!.postMessage({ type: 'count', events, cpu: cpuSeconds() })
  if (m.type === 'report' && m.accepted && m.sent) {
    const fromAccept = new Uint32Array(buckets)
    const fromSend = new Uint32Array(buckets)
    let missing = 0
    for (let s = 0; s < total; s++) {
      const accepted = m.accepted[s]!
      const sent = m.sent[s]!
      for (let r = 0; r < readers; r++) {
        const at = received[s * readers + r]!
        if (!(at > 0) || Number.isNaN(accepted)) {
          missing++
          continue
        }
        // An event may arrive before its hook's 200 does (the hub runs after the commit,
        // the answer is written meanwhile): that delivery counts as 0 ms from accept.
        fromAccept[Math.min(buckets - 1, Math.floor(Math.max(0, at - accepted) / bucketMs))]!++
        fromSend[Math.min(buckets - 1, Math.floor(Math.max(0, at - sent) / bucketMs))]!++
      }
    }
    parentPort!.postMessage({ type: 'report', fromAccept, fromSend, missing, duplicates, cpu: cpuSeconds() })
  }
})
