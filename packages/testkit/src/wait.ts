/**
 * Waiting for something that happens in another process or on a timer: poll, never sleep
 * for a guessed time. The deadline only bounds a failing test; a passing one returns as soon
 * as the condition holds.
 */

/** What a truthy check returns: its value without the falsy members of its type. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>

/**
 * Poll `check` until it returns a truthy value; a throw counts as "not yet". Past the deadline
 * the error names `what` and the last throw.
 *
 * @example const row = await waitFor('the listener is back', () => listenerPid(db))
 */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20_000): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await check()
      if (v) return v as Truthy<T>
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`)
    }
    await new Promise((r) => setTimeout(r, 25))
  }
}
