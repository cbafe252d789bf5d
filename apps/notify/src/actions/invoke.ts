/**
 * Invoking a card's registered action or an imported slash command, exactly once per
 * Idempotency-Key (spec Part B, Endpoints and Events 2).
 *
 * The key is scoped to the reader. The first request claims it by inserting a `pending`
 * invocation row (unique on reader and key), so of two requests with the same key, on one
 * process or two sharing the database, exactly one calls the target; the other waits for
 * the row to become final and answers the same outcome without calling. A key reused for
 * another action is a 409. The row moves once from `pending` to `success` or `failure` and
 * is then immutable (database triggers). A claim whose process died mid-call is finalised
 * as a failure by the next request with that key once the call deadline has surely passed.
 */
import { isUniqueViolation } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import type { ActionInvocationRow, DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import type { ActionKeys } from '../settings/action-key.ts'
import { type CallbackLimits, type CallbackOutcome, sendCallback } from './dispatch.ts'

/** Visible ASCII, as the Idempotency-Key draft's examples; bounded so it can be a column. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/
const WAIT_STEP_MS = 100
/** Past the call deadline plus this, a still-pending claim is treated as abandoned. */
const ABANDONED_AFTER_MS = 5_000

export interface InvokeDeps {
  db: Kysely<DB>
  keys: ActionKeys
  limits: CallbackLimits
  userAgent: string
  /** Counts target calls by outcome (replays are not calls). */
  onOutcome?: (outcome: 'success' | 'failure') => void
}

export interface InvocationScope {
  notification_id: number | null
  action_index: number | null
  channel: string | null
  target: string
}

export interface InvocationResponse {
  id: number
  notification_id: number | null
  action_index: number | null
  channel: string | null
  target: string
  username: string
  outcome: 'pending' | 'success' | 'failure'
  status_code: number | null
  error: string | null
  response_text: string | null
  created_at: string
  finished_at: string | null
}

export function invocationResponse(r: ActionInvocationRow): InvocationResponse {
  return {
    id: Number(r.id),
    notification_id: r.notification_id === null ? null : Number(r.notification_id),
    action_index: r.action_index,
    channel: r.channel,
    target: r.target,
    username: r.username,
    outcome: r.outcome,
    status_code: r.status_code,
    error: r.error,
    response_text: r.response_text,
    created_at: r.created_at,
    finished_at: r.finished_at,
  }
}

export function checkIdempotencyKey(value: string | string[] | undefined): string {
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY.test(value)) throw errors.idempotency_key_required()
  return value
}

function findClaim(db: Kysely<DB>, userId: string, key: string) {
  return db
    .selectFrom('action_invocations')
    .selectAll()
    .where('user_id', '=', userId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst()
}

function sameScope(row: ActionInvocationRow, scope: InvocationScope): boolean {
  return (
    (row.notification_id === null ? null : Number(row.notification_id)) === scope.notification_id &&
    row.action_index === scope.action_index &&
    row.channel === scope.channel &&
    row.target === scope.target
  )
}

/** What a finished call records; `responseText` only for slash commands. */
export type Finished = CallbackOutcome & { responseText?: string | null }

async function finish(db: Kysely<DB>, id: number, o: Finished): Promise<void> {
  await db
    .updateTable('action_invocations')
    .set({
      outcome: o.outcome,
      status_code: o.statusCode,
      error: o.error === null ? null : o.error.slice(0, 500),
      response_text: o.responseText ?? null,
      finished_at: new Date().toISOString(),
    })
    .where('id', '=', id)
    .where('outcome', '=', 'pending')
    .execute()
}

/** The first outcome of an existing claim, waiting while its call runs. */
async function outcomeOf(deps: InvokeDeps, row: ActionInvocationRow): Promise<ActionInvocationRow> {
  const deadline = Date.now() + deps.limits.timeoutMs + ABANDONED_AFTER_MS
  let current: ActionInvocationRow | undefined = row
  while (current && current.outcome === 'pending') {
    const age = Date.now() - Date.parse(current.created_at)
    if (age > deps.limits.timeoutMs + ABANDONED_AFTER_MS) {
      await finish(deps.db, Number(current.id), {
        outcome: 'failure',
        statusCode: null,
        error: 'interrupted: the process handling this invocation stopped before it finished',
      })
    } else if (Date.now() > deadline) {
      throw errors.action_in_progress()
    } else {
      await new Promise((r) => setTimeout(r, WAIT_STEP_MS))
    }
    current = await findClaim(deps.db, current.user_id, current.idempotency_key)
  }
  if (!current) throw errors.action_in_progress()
  return current
}

/**
 * Run `call` at most once for this reader and key; answers the recorded invocation and
 * whether it is a replay of an earlier request.
 */
export async function invokeOnce(
  deps: InvokeDeps,
  reader: Reader,
  key: string,
  scope: InvocationScope,
  call: () => Promise<Finished>,
): Promise<{ invocation: ActionInvocationRow; replayed: boolean }> {
  const existing = await findClaim(deps.db, reader.id, key)
  if (existing) {
    if (!sameScope(existing, scope)) throw errors.idempotency_key_reused()
    return { invocation: await outcomeOf(deps, existing), replayed: true }
  }
  let id: number
  try {
    const inserted = await deps.db
      .insertInto('action_invocations')
      .values({
        user_id: reader.id,
        username: reader.username,
        idempotency_key: key,
        ...scope,
        outcome: 'pending',
        status_code: null,
        error: null,
        response_text: null,
        created_at: new Date().toISOString(),
        finished_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    id = Number(inserted.id)
  } catch (err) {
    if (!isUniqueViolation(err)) throw err
    const winner = await findClaim(deps.db, reader.id, key)
    if (!winner) throw err
    if (!sameScope(winner, scope)) throw errors.idempotency_key_reused()
    return { invocation: await outcomeOf(deps, winner), replayed: true }
  }
  let outcome: Finished
  try {
    outcome = await call()
  } catch (err) {
    // Recorded as a failure either way; the cause (e.g. an unreadable credential) is logged by the caller.
    await finish(deps.db, id, { outcome: 'failure', statusCode: null, error: 'the callback could not be prepared' })
    throw err
  }
  await finish(deps.db, id, outcome)
  deps.onOutcome?.(outcome.outcome)
  const row = await deps.db.selectFrom('action_invocations').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  return { invocation: row, replayed: false }
}

export { sendCallback }
