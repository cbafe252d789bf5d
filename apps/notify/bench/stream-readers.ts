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

function open(r: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/v1/stream`, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`))
      res.setEncoding('utf8')
      let buf = ''
      let ready = false
      res.on('data', (chunk: string) => {
        const at = performance.timeOrigin + performance.now()
        buf += chunk
        let start = 0
        for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n', start)) {
          const block = buf.slice(start, end)
          start = end + 2
          if (!ready && block.includes('event: ready')) {
            ready = true
            resolve()
            continue
          }
          if (!block.includes('event: notification')) continue
          const i = block.indexOf('seq:')
          if (i < 0) continue
          events++
          const seq = Number.parseInt(block.slice(i + 4, i + 16), 10)
          if (seq < total) received[seq * readers + r] = at
        }
        buf = buf.slice(start)
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
