/**
 * Readers: the bootstrap administrator from the environment, administrator-created
 * readers, and sign-in.
 */
import { randomUUID } from 'node:crypto'
import { isUniqueViolation } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'
import { dummyHash, hashPassword, verifyPassword } from '../auth/passwords.ts'
import type { DB, UserRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { findUserByName, insertUser, updateUser } from './store.ts'

export interface CreateUserRequest {
  username: string
  password?: string
  admin?: boolean
  kind?: 'human' | 'system'
}

export interface UserResponse {
  id: string
  username: string
  kind: 'human' | 'system'
  auth_type: 'local' | 'oidc' | 'none'
  admin: boolean
  enabled: boolean
  created_at: string
  last_sign_in_at: string | null
}

export function userResponse(u: UserRow): UserResponse {
  return {
    id: u.id,
    username: u.username,
    kind: u.kind,
    auth_type: u.auth_type,
    admin: u.is_admin === 1,
    enabled: u.enabled === 1,
    created_at: u.created_at,
    last_sign_in_at: u.last_sign_in_at,
  }
}

export class UserService {
  readonly #db: Kysely<DB>
  readonly #cost: number
  #dummy: Promise<string> | undefined

  constructor(db: Kysely<DB>, bcryptCost: number) {
    this.#db = db
    this.#cost = bcryptCost
  }

  async create(req: CreateUserRequest): Promise<UserRow> {
    const kind = req.kind ?? 'human'
    if (kind === 'system' && req.password !== undefined) {
      throw errors.invalid_payload('a system user has no password')
    }
    const row: UserRow = {
      id: randomUUID(),
      username: req.username,
      kind,
      auth_type: req.password === undefined ? 'none' : 'local',
      oidc_subject: null,
      password_hash: req.password === undefined ? null : await hashPassword(req.password, this.#cost),
      is_admin: req.admin ? 1 : 0,
      enabled: 1,
      created_at: new Date().toISOString(),
      last_sign_in_at: null,
    }
    try {
      await insertUser(this.#db, row)
    } catch (err) {
      if (isUniqueViolation(err)) throw errors.user_exists(req.username)
      throw err
    }
    return row
  }

  /**
   * The environment names the bootstrap administrator: created when missing; when it
   * exists, its password is reset to the configured one (if different) and it is kept an
   * enabled administrator, so the environment always opens the installation.
   */
  async ensureBootstrapAdmin(username: string, password: string): Promise<UserRow> {
    const existing = await findUserByName(this.#db, username)
    if (!existing) return this.create({ username, password, admin: true })
    const wanted: Partial<UserRow> = { is_admin: 1, enabled: 1, auth_type: 'local', kind: 'human' }
    const patch = Object.fromEntries(
      Object.entries(wanted).filter(([key, value]) => existing[key as keyof UserRow] !== value),
    ) as Partial<UserRow>
    if (!(await verifyPassword(password, existing.password_hash))) {
      patch.password_hash = await hashPassword(password, this.#cost)
    }
    // Written only when something differs: a start on a read-only database (a standby after a
    // failover) must not fail on a write that changes nothing.
    if (Object.keys(patch).length > 0) await updateUser(this.#db, existing.id, patch)
    return { ...existing, ...patch } as UserRow
  }

  /** The development-mode identity: a system administrator that never signs in. */
  async ensureLocalReader(username: string): Promise<UserRow> {
    const existing = await findUserByName(this.#db, username)
    if (existing) return existing
    try {
      return await this.create({ username, kind: 'system', admin: true })
    } catch (err) {
      const again = await findUserByName(this.#db, username)
      if (again) return again
      throw err
    }
  }

  /** The user for a correct local password, else login_failed (same work either way). */
  async login(username: string, password: string): Promise<UserRow> {
    const user = await findUserByName(this.#db, username)
    if (user?.auth_type !== 'local' || user.enabled !== 1) {
      this.#dummy ??= dummyHash(this.#cost)
      await verifyPassword(password, await this.#dummy)
      throw errors.login_failed()
    }
    if (!(await verifyPassword(password, user.password_hash))) throw errors.login_failed()
    return user
  }
}
