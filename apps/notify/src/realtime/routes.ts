/**
 * The realtime stream (path ours; the spec leaves it unshown):
 *   GET /api/v1/stream    Server-Sent Events for the signed-in reader; resume with the
 *                         Last-Event-ID header (EventSource sends it itself) or ?after=N-M
 * The event format is documented in README.md ("Realtime stream").
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import type { StreamHub, StreamSink } from './hub.ts'
import { type Position, parsePosition } from './position.ts'

/** Reconnection delay suggested to EventSource clients (ms). */
const RETRY_MS = 2000
/** Longest delay a timer takes (about 24.8 days); a stream outliving it ends then and reconnects. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

const StreamQuery = Type.Object(
  { after: Type.Optional(Type.String({ maxLength: 40 })) },
  { additionalProperties: false },
)

export function streamRoutes(app: HttpApp, ctx: Context, hub: StreamHub) {
  app.get(
    '/api/v1/stream',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: "Stream the reader's events (Server-Sent Events)", tags: ['inbox'], querystring: StreamQuery },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const header = req.headers['last-event-id']
      const text = typeof header === 'string' && header !== '' ? header : req.query.after
      // Parsed before the response starts, so a bad position is an ordinary 400.
      const from: Position | undefined = text !== undefined ? parsePosition(text) : undefined
      reply.hijack()
      const res = reply.raw
      // No chunked encoding: the stream ends when the connection does (the response says
      // `Connection: close`), so each write is one socket write of the event bytes, without
      // a chunk header, a cork and a writev per write (most of a 1,000-stream fan-out).
      res.useChunkedEncodingByDefault = false
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      })
      res.write(`retry: ${RETRY_MS}\n\n`)
      // The head went out with that first write; with no chunk framing the rest of the body
      // is plain bytes, written to the socket itself (the response's own write adds layers
      // of bookkeeping per call, which a pass pays once per stream).
      const socket = res.socket
      const sink: StreamSink = {
        write: (chunk) => {
          if (socket && !socket.destroyed) socket.write(chunk)
        },
        get buffered() {
          return (socket?.writableLength ?? 0) + res.writableLength
        },
        close: () => res.end(),
      }
      let closed = false
      let expiry: NodeJS.Timeout | undefined
      // The credential's expiry ends the stream, as revoking it does (hub.ts): the client's
      // reconnection is then refused, and a stream never outlives what let it in. A session
      // used meanwhile has moved its end forward (auth/sessions.ts): the stream follows it.
      const endAt = (at: number) => {
        expiry = setTimeout(
          async () => {
            const now = await ctx.guard.reader(req, false).catch(() => undefined)
            if (closed) return
            if (now?.expiresAt !== undefined && now.expiresAt > Date.now()) endAt(now.expiresAt)
            else res.end()
          },
          Math.min(Math.max(at - Date.now(), 0), LONGEST_TIMER_MS),
        )
      }
      if (reader.expiresAt !== undefined) endAt(reader.expiresAt)
      res.on('close', () => {
        clearTimeout(expiry)
        // Finish the response too: node counts a connection as busy until its response ends,
        // and a server closing gracefully would wait for it.
        if (!res.writableEnded) res.end()
        closed = true
        if (sub) hub.detach(sub)
      })
      let sub: Awaited<ReturnType<StreamHub['attach']>> | undefined
      try {
        sub = await hub.attach(reader, sink, from)
      } catch (err) {
        req.log.warn({ err }, 'realtime stream could not attach')
        res.end()
        return
      }
      if (closed) hub.detach(sub)
    },
  )
}
