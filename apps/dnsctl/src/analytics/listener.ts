/**
 * The dnstap socket: a unix-socket server kresd's dnstap module connects to (its
 * `socket_path`). Each connection runs the Frame Streams handshake (READY -> ACCEPT, START,
 * data, STOP -> FINISH); a protocol error closes that connection only. Frames are decoded and
 * counted synchronously, so a slow reader applies back-pressure through the socket instead of
 * buffering without bound.
 */
import { rm } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import type { Logger } from '@gatehouse/kit'
import { DnstapError, decodeDnstap } from './dnstap.ts'
import { CONTENT_TYPE, CONTROL, controlFrame, FrameDecoder, FrameStreamError } from './framestream.ts'
import type { AnalyticsService } from './service.ts'

export class DnstapListener {
  readonly path: string
  readonly service: AnalyticsService
  readonly log: Logger
  #server: Server | undefined
  readonly #sockets = new Set<Socket>()
  frames = 0
  protocolErrors = 0

  constructor(path: string, service: AnalyticsService, log: Logger) {
    this.path = path
    this.service = service
    this.log = log
  }

  async start(): Promise<void> {
    await rm(this.path, { force: true })
    this.#server = createServer((socket) => this.#connection(socket))
    await new Promise<void>((resolve, reject) => {
      this.#server!.once('error', reject)
      this.#server!.listen(this.path, () => resolve())
    })
  }

  #connection(socket: Socket) {
    this.#sockets.add(socket)
    socket.on('close', () => this.#sockets.delete(socket))
    socket.on('error', () => {})
    const decoder = new FrameDecoder()
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const ev of decoder.push(chunk)) {
          if (ev.kind === 'data') {
            this.frames++
            try {
              this.service.ingest(decodeDnstap(ev.payload))
            } catch (err) {
              if (!(err instanceof DnstapError)) throw err
              this.service.skipped++
            }
          } else if (ev.type === CONTROL.READY) {
            if (ev.contentTypes.length > 0 && !ev.contentTypes.includes(CONTENT_TYPE)) {
              throw new FrameStreamError(`the writer offers ${ev.contentTypes.join(', ')}, not ${CONTENT_TYPE}`)
            }
            socket.write(controlFrame(CONTROL.ACCEPT, [CONTENT_TYPE]))
          } else if (ev.type === CONTROL.STOP) {
            socket.end(controlFrame(CONTROL.FINISH))
          }
        }
      } catch (err) {
        if (!(err instanceof FrameStreamError)) throw err
        this.protocolErrors++
        this.log.warn({ err: err.message }, 'dnstap connection closed: protocol error')
        socket.destroy()
      }
    })
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
    await rm(this.path, { force: true })
  }
}
