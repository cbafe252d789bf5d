/**
 * The readers of bench/stream.ts, in a worker thread: R Server-Sent-Events streams whose
 * parsing must not hold up the thread that sends hooks (on one event loop, the senders'
 * closed loop measured the readers' parsing more than notify). Receive times are absolute
 * (`performance.timeOrigin + now()`), comparable with the sender thread's accept times.
 *
 * Messages in: {type:'report', accepted: Float64Array} (accept time per seq, NaN if none).
 * Messages out: {type:'connected'}, {type:'count', events}, {type:'report', latencies}.
 */
import http from 'node:http'
import { parentPort, workerData } from 'node:worker_threads'

const { base, readers, total } = workerData as { base: string; readers: number; total: number }
/** Receive time of seq s at reader r: received[s * readers + r] (0: not yet). */
const received = new Float64Array(total * readers)
let events = 0

/** Each notification event carries its hook's `seq:N` in its title, once. */
const NEEDLE = Buffer.from('"title":"seq:')
const READY = Buffer.from('event: ready')

/**
 * The readers scan raw bytes for NEEDLE and parse the digits after it: no UTF-8 decoding,
 * no string per event (at 1,000 readers x 1,000 hooks/s that decoding cost the shared
 * cores more than notify's own fan-out). A match cut by a chunk boundary is completed
 * with the next chunk (the only case in which a chunk is copied).
 */
function open(r: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/v1/stream`, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`))
      let carry: Buffer | undefined
      let ready = false
      res.on('data', (chunk: Buffer) => {
        const at = performance.timeOrigin + performance.now()
        const buf = carry ? Buffer.concat([carry, chunk]) : chunk
        carry = undefined
        if (!ready) {
          if (buf.indexOf(READY) < 0) {
            carry = buf
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
            carry = buf.subarray(i) // the digits may go on in the next chunk
            return
          }
          events++
          if (seq < total) received[seq * readers + r] = at
          from = p
        }
        // Keep only a cut-off start of the needle (events end in "\n\n", so almost never):
        // a chunk is copied only when a match really spans two chunks.
        for (let k = Math.min(NEEDLE.length - 1, buf.length - from); k > 0; k--) {
          if (buf.subarray(buf.length - k).equals(NEEDLE.subarray(0, k))) {
            carry = buf.subarray(buf.length - k)
            break
          }
        }
      })
    })
    req.on('error', reject)
  })
}

for (let r = 0; r < readers; r++) await open(r)
parentPort!.postMessage({ type: 'connected' })
parentPort!.on('message', (m: { type: string; accepted?: Float64Array }) => {
  if (m.type === 'count') parentPort!.postMessage({ type: 'count', events })
  if (m.type === 'report' && m.accepted) {
    const latencies: number[] = []
    for (let s = 0; s < total; s++) {
      const t0 = m.accepted[s]!
      for (let r = 0; r < readers; r++) {
        const at = received[s * readers + r]!
        if (at > 0 && !Number.isNaN(t0)) latencies.push(Math.max(0, at - t0))
      }
    }
    parentPort!.postMessage({ type: 'report', latencies: Float64Array.from(latencies) })
  }
})
