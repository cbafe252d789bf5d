/**
 * Zone transactions (zone-begin, zone-unset, zone-set, zone-commit) sent straight to knotd's
 * control socket, in the protocol of libknot's control interface (libknot/control/control.h,
 * the public library knotc and Knot's Python bindings use). Spawning knotc costs more than a
 * small zone's whole reload, and a knotc in between adds a process hop to every command.
 *
 * The protocol: a message is units; a unit is one type octet (0 end, 1 data, 2 extra, 3 block)
 * and, for data units, items: one octet `16 + index` (command, flags, error, section, item, id,
 * zone, owner, ttl, type, data, filter), a 16-bit big-endian length and the value. A command is
 * a data unit and a block; knotd answers with data units (an `error` item on failure) and a
 * block. knotd serves one control connection at a time, so each transaction opens its own and
 * ends it at once (end unit, close): other knotc users wait for one transaction at most.
 */
import { connect, type Socket } from 'node:net'
import { KnotError } from './knotc.ts'

const ITEMS = [
  'cmd',
  'flags',
  'error',
  'section',
  'item',
  'id',
  'zone',
  'owner',
  'ttl',
  'type',
  'data',
  'filter',
] as const
type Item = (typeof ITEMS)[number]
export type ControlUnit = Partial<Record<Item, string>>

const TYPE_END = 0
const TYPE_DATA = 1
const TYPE_EXTRA = 2
const TYPE_BLOCK = 3
const ITEM_OFFSET = 16

/** One command: its data unit and the block that ends it. */
export function encodeCommand(unit: ControlUnit): Buffer {
  const parts: Buffer[] = [Buffer.from([TYPE_DATA])]
  ITEMS.forEach((name, index) => {
    const value = unit[name]
    if (value === undefined) return
    const bytes = Buffer.from(value, 'utf8')
    if (bytes.length > 0xffff) throw new KnotError(`knot control: ${name} longer than 65535 octets`)
    const head = Buffer.alloc(3)
    head[0] = ITEM_OFFSET + index
    head.writeUInt16BE(bytes.length, 1)
    parts.push(head, bytes)
  })
  parts.push(Buffer.from([TYPE_BLOCK]))
  return Buffer.concat(parts)
}

/** Splits knotd's answer stream into answers: the data units before each block. */
export class AnswerDecoder {
  #buffer: Buffer = Buffer.alloc(0)
  #units: ControlUnit[] = []
  #unit: ControlUnit | undefined

  /** Feed bytes; returns the answers completed by them. Throws on bytes outside the protocol. */
  push(chunk: Buffer): ControlUnit[][] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk])
    const b = this.#buffer
    const answers: ControlUnit[][] = []
    let at = 0
    while (at < b.length) {
      const code = b[at]!
      if (code < ITEM_OFFSET) {
        if (this.#unit) this.#units.push(this.#unit)
        this.#unit = undefined
        at++
        if (code === TYPE_DATA || code === TYPE_EXTRA) this.#unit = {}
        else if (code === TYPE_BLOCK || code === TYPE_END) {
          answers.push(this.#units)
          this.#units = []
        } else throw new KnotError(`knot control: unknown unit type ${code}`)
        continue
      }
      const name = ITEMS[code - ITEM_OFFSET]
      if (name === undefined || !this.#unit) throw new KnotError(`knot control: unexpected item code ${code}`)
      if (at + 3 > b.length) break
      const length = b.readUInt16BE(at + 1)
      if (at + 3 + length > b.length) break
      this.#unit[name] = b.toString('utf8', at + 3, at + 3 + length)
      at += 3 + length
    }
    this.#buffer = b.subarray(at)
    return answers
  }
}

/** The error message of an answer, undefined for success. */
function answerError(answer: ControlUnit[]): string | undefined {
  return answer.find((u) => u.error !== undefined)?.error
}

/** One control connection for the length of a transaction. */
class Connection {
  readonly #socket: Socket
  readonly #decoder = new AnswerDecoder()
  readonly #waiting: { resolve: (a: ControlUnit[]) => void; reject: (e: Error) => void }[] = []
  #failed: Error | undefined

  constructor(path: string, timeoutMs: number) {
    this.#socket = connect(path)
    this.#socket.setTimeout(timeoutMs, () =>
      this.#fail(new KnotError(`knot control: no answer within ${timeoutMs} ms`)),
    )
    this.#socket.on('data', (chunk: Buffer) => {
      try {
        for (const answer of this.#decoder.push(chunk)) this.#waiting.shift()?.resolve(answer)
      } catch (err) {
        this.#fail(err as Error)
      }
    })
    this.#socket.on('error', (err) => this.#fail(new KnotError(`knot control socket ${path}: ${err.message}`)))
    this.#socket.on('close', () => this.#fail(new KnotError('knot control: knotd closed the connection')))
  }

  #fail(err: Error): void {
    this.#failed ??= err
    for (const w of this.#waiting.splice(0)) w.reject(err)
    this.#socket.destroy()
  }

  /** Send commands at once; resolves with one answer per command, in order. */
  send(units: ControlUnit[]): Promise<ControlUnit[][]> {
    if (this.#failed) return Promise.reject(this.#failed)
    // Encode before anything waits for an answer: a unit that cannot be encoded (an item over
    // 65535 octets) must fail this call only. Waiters pushed first were rejected later, when the
    // connection closed, with nobody listening: an unhandled rejection that ended the process.
    let bytes: Buffer
    try {
      bytes = Buffer.concat(units.map(encodeCommand))
    } catch (err) {
      return Promise.reject(err)
    }
    const answers = units.map(
      () => new Promise<ControlUnit[]>((resolve, reject) => this.#waiting.push({ resolve, reject })),
    )
    this.#socket.write(bytes)
    return Promise.all(answers)
  }

  /** The end unit, then close (knotd moves on to the next connection). */
  end(): void {
    this.#failed ??= new KnotError('knot control: connection ended')
    this.#socket.end(Buffer.from([TYPE_END]))
  }
}

export class KnotControl {
  readonly socketPath: string
  readonly timeoutMs: number

  constructor(socketPath: string, timeoutMs: number) {
    this.socketPath = socketPath
    this.timeoutMs = timeoutMs
  }

  /**
   * Apply record changes to `zone` in one transaction: every removal and addition is checked
   * before the commit, and any refusal aborts the transaction (knotd keeps the zone as it was).
   * Records are `[owner, ttl, type, rdata]` in presentation form with absolute names.
   */
  async transaction(zone: string, remove: string[][], add: string[][]): Promise<void> {
    const steps: ControlUnit[] = [
      { cmd: 'zone-begin', zone },
      ...remove.map(([owner, , type, data]) => ({ cmd: 'zone-unset', zone, owner, type, data })),
      ...add.map(([owner, ttl, type, data]) => ({ cmd: 'zone-set', zone, owner, ttl, type, data })),
    ]
    const conn = new Connection(this.socketPath, this.timeoutMs)
    try {
      let answers = await conn.send(steps)
      if (/too many transactions/.test(answerError(answers[0]!) ?? '')) {
        // A transaction left open (dnsctl stopped halfway): nothing of it was committed.
        await conn.send([{ cmd: 'zone-abort', zone }])
        answers = await conn.send(steps)
      }
      const refused = answers.findIndex((a) => answerError(a) !== undefined)
      if (refused !== -1) {
        if (refused > 0) await conn.send([{ cmd: 'zone-abort', zone }])
        const s = steps[refused]!
        throw new KnotError(
          `knot ${s.cmd} ${[s.owner, s.type, s.data].filter(Boolean).join(' ')}: ${answerError(answers[refused]!)}`,
        )
      }
      const [committed] = await conn.send([{ cmd: 'zone-commit', zone }])
      const error = answerError(committed!)
      if (error !== undefined) {
        await conn.send([{ cmd: 'zone-abort', zone }]).catch(() => {})
        throw new KnotError(`knot zone-commit ${zone}: ${error}`)
      }
    } finally {
      conn.end()
    }
  }
}
