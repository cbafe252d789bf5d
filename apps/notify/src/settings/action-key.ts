/**
 * The action encryption key (spec Part B, Authentication 8). `NOTIFY_ACTION_KEY` is only
 * bootstrap material: the first credential operation (an action-target save or a
 * slash-command import) commits it as the cluster setting `action_encryption_key`, and
 * from then on every process encrypts and decrypts with that setting alone, whatever its
 * own environment says. Two nodes racing to commit different bootstrap keys converge on
 * whichever committed first (insert-if-absent, then read back). Without a committed key
 * and without valid bootstrap material, credential operations answer 503 and the server
 * still runs.
 *
 * Sealing is AES-256-GCM with a random 96-bit nonce; the additional data binds a
 * ciphertext to its purpose and owner (`target:<name>`, `context:<id>:<index>`), so a
 * sealed credential copied into another row does not open. Format: `v1.<nonce>.<sealed>`
 * (base64url; sealed is ciphertext followed by the 128-bit tag). Whoever can read the
 * database, a dump or a backup can decrypt: the key is stored beside the data, as the spec
 * says.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'

export const ACTION_KEY_SETTING = 'action_encryption_key'

/** 32 bytes from base64, base64url or 64 hex digits; undefined when the text is none of these. */
export function parseKeyMaterial(text: string | undefined): Buffer | undefined {
  if (text === undefined) return undefined
  const s = text.trim()
  if (/^[0-9a-fA-F]{64}$/.test(s)) return Buffer.from(s, 'hex')
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(s)) {
    const key = Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
    if (key.length === 32) return key
  }
  return undefined
}

export class ActionKeys {
  readonly #db: Kysely<DB>
  readonly #bootstrap: Buffer | undefined
  #committed: Buffer | undefined

  constructor(db: Kysely<DB>, bootstrap: string | undefined) {
    this.#db = db
    this.#bootstrap = parseKeyMaterial(bootstrap)
  }

  /** Whether the bootstrap variable held usable material (for a startup warning). */
  get bootstrapValid(): boolean {
    return this.#bootstrap !== undefined
  }

  /** The committed key, or undefined (never commits). */
  async committed(db: Kysely<DB> = this.#db): Promise<Buffer | undefined> {
    if (this.#committed) return this.#committed
    const row = await db
      .selectFrom('settings')
      .select('value')
      .where('name', '=', ACTION_KEY_SETTING)
      .executeTakeFirst()
    if (row) this.#committed = Buffer.from(row.value, 'base64url')
    return this.#committed
  }

  /** The committed key, committing the bootstrap material first when none is; 503 without either. */
  async forWrite(): Promise<Buffer> {
    const existing = await this.committed()
    if (existing) return existing
    if (!this.#bootstrap) throw errors.action_key_unavailable()
    await this.#db
      .insertInto('settings')
      .values({
        name: ACTION_KEY_SETTING,
        value: this.#bootstrap.toString('base64url'),
        created_at: new Date().toISOString(),
      })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute()
    const key = await this.committed()
    if (!key) throw errors.action_key_unavailable()
    return key
  }

  /**
   * For a dry run: the committed key, or undefined when the bootstrap material would be
   * committed by the real run; 503 when neither exists (the real run would fail). Commits nothing.
   */
  async forDryRun(): Promise<Buffer | undefined> {
    const key = await this.committed()
    if (!key && !this.#bootstrap) throw errors.action_key_unavailable()
    return key
  }

  /** The committed key for reading sealed values; 503 when none was ever committed. */
  async forRead(): Promise<Buffer> {
    const key = await this.committed()
    if (!key) throw errors.action_key_unavailable()
    return key
  }
}

export function seal(key: Buffer, plaintext: string, aad: string): string {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  cipher.setAAD(Buffer.from(aad, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
  return `v1.${nonce.toString('base64url')}.${body.toString('base64url')}`
}

/** The plaintext, or a TypeError when the value was not sealed with this key and additional data. */
export function open(key: Buffer, sealed: string, aad: string): string {
  const [version, nonceText, bodyText] = sealed.split('.')
  if (version !== 'v1' || !nonceText || !bodyText) throw new TypeError('not a sealed value')
  const body = Buffer.from(bodyText, 'base64url')
  if (body.length < 16) throw new TypeError('sealed value too short')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonceText, 'base64url'))
  decipher.setAAD(Buffer.from(aad, 'utf8'))
  decipher.setAuthTag(body.subarray(body.length - 16))
  return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8')
}
