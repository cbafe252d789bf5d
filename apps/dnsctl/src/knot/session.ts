/**
 * One long-lived `knotc` in interactive mode for zone transactions (zone-begin, zone-set,
 * zone-unset, zone-commit). Spawning knotc costs more than a small zone's whole reload, and a
 * one-RRset change applied as a transaction costs knotd a few records instead of re-reading the
 * zone file, so the publication pipeline sends its record changes through here.
 *
 * knotc reads one command per line from stdin and answers each with one line (`OK` or
 * `error: ...`); `stdbuf -oL` makes it write each answer at once instead of when its output
 * buffer fills. Its line tokenizer (libedit's) reads quotes like a shell does, so every argument
 * is single-quoted. Any surprise (a dead process, an answer that never comes) throws: the caller
 * falls back to a plain zone reload, which is always correct.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { type KnotcOptions, KnotError } from './knotc.ts'

/** A knotc argument that survives its shell-like line splitting unchanged. */
export function quoteArgument(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`
}

export class KnotcSession {
  readonly options: KnotcOptions
  #child: ChildProcessWithoutNullStreams | undefined
  #buffer = ''
  #waiting: { lines: string[]; need: number; resolve: (lines: string[]) => void; reject: (e: Error) => void }[] = []
  #tail: Promise<unknown> = Promise.resolve()

  constructor(options: KnotcOptions) {
    this.options = options
  }

  #start(): ChildProcessWithoutNullStreams {
    if (this.#child) return this.#child
    const timeoutSeconds = Math.max(1, Math.ceil(this.options.timeoutMs / 1000))
    const child = spawn(
      'stdbuf',
      ['-oL', this.options.knotc, '-s', this.options.socket, '-t', String(timeoutSeconds)],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    this.#child = child
    this.#buffer = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      this.#buffer += chunk
      for (let nl = this.#buffer.indexOf('\n'); nl !== -1; nl = this.#buffer.indexOf('\n')) {
        const line = this.#buffer.slice(0, nl)
        this.#buffer = this.#buffer.slice(nl + 1)
        const w = this.#waiting[0]
        // An answer nobody waits for means the two sides disagree: start over.
        if (!w) return this.#fail(new KnotError(`knotc session: unexpected output ${JSON.stringify(line)}`))
        w.lines.push(line)
        if (w.lines.length === w.need) {
          this.#waiting.shift()
          w.resolve(w.lines)
        }
      }
    })
    child.stderr.resume()
    const gone = (why: string) => () => {
      if (this.#child === child) this.#fail(new KnotError(`knotc session ${why}`))
    }
    child.on('error', (err) => gone(`failed: ${err.message}`)())
    child.on('exit', gone('exited'))
    child.stdin.on('error', () => {})
    // The session must never keep the process alive on its own.
    child.unref()
    for (const s of [child.stdin, child.stdout, child.stderr] as unknown as { unref?: () => void }[]) s.unref?.()
    return child
  }

  #fail(err: Error): void {
    const child = this.#child
    this.#child = undefined
    if (child && child.exitCode === null) child.kill()
    for (const w of this.#waiting.splice(0)) w.reject(err)
  }

  /** Send commands (argument lists) at once; resolves with one answer line per command. */
  #send(commands: string[][]): Promise<string[]> {
    const child = this.#start()
    return new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(
        () => this.#fail(new KnotError(`knotc session: no answer within ${this.options.timeoutMs} ms`)),
        this.options.timeoutMs,
      )
      this.#waiting.push({
        lines: [],
        need: commands.length,
        resolve: (lines) => {
          clearTimeout(timer)
          resolve(lines)
        },
        reject: (err) => {
          clearTimeout(timer)
          reject(err)
        },
      })
      child.stdin.write(`${commands.map((c) => c.map(quoteArgument).join(' ')).join('\n')}\n`)
    })
  }

  /**
   * Apply record changes to `zone` in one transaction: every removal and addition is checked
   * before the commit, and any refusal aborts the transaction (knotd keeps the zone as it was).
   * Records are `[owner, ttl, type, rdata]` in presentation form with absolute names.
   */
  transaction(zone: string, remove: string[][], add: string[][]): Promise<void> {
    const run = async () => {
      const steps = [
        ['zone-begin', zone],
        ...remove.map(([owner, , type, rdata]) => ['zone-unset', zone, owner!, type!, rdata!]),
        ...add.map(([owner, ttl, type, rdata]) => ['zone-set', zone, owner!, ttl!, type!, rdata!]),
      ]
      let answers = await this.#send(steps)
      if (/too many transactions/.test(answers[0] ?? '')) {
        // A transaction left open (dnsctl stopped halfway): nothing of it was committed.
        await this.#send([['zone-abort', zone]])
        answers = await this.#send(steps)
      }
      const refused = answers.findIndex((a) => a !== 'OK')
      if (refused !== -1) {
        if (refused > 0) await this.#send([['zone-abort', zone]])
        throw new KnotError(`knotc ${steps[refused]!.slice(0, 3).join(' ')}: ${answers[refused]}`)
      }
      const [committed] = await this.#send([['zone-commit', zone]])
      if (committed !== 'OK') {
        await this.#send([['zone-abort', zone]]).catch(() => {})
        throw new KnotError(`knotc zone-commit ${zone}: ${committed}`)
      }
    }
    // After any failure the next transaction starts a fresh knotc: whatever went wrong (knotd
    // restarted under it, a lost answer) stays with the old process.
    const guarded = () =>
      run().catch((err: Error) => {
        this.#fail(err)
        throw err
      })
    // One transaction at a time: answers are matched to commands by their order.
    const result = this.#tail.then(guarded, guarded)
    this.#tail = result.catch(() => {})
    return result
  }

  close(): void {
    const child = this.#child
    this.#child = undefined
    if (child) {
      child.stdin.end()
      if (child.exitCode === null) child.kill()
    }
  }
}
