/**
 * The control-plane credentials read again while the agent runs: on SIGHUP (a certificate
 * renewal's deploy hook, `systemctl reload`, or an operator who put a token from
 * `edgegate node rotate-token` in place), and after a batch refused for its credentials, so a
 * rotated token written to the token file is taken without any signal. All or nothing: what
 * cannot be read keeps the previous credentials in use, and the log says why.
 */
import type { Logger } from '@gatehouse/kit'
import type { ControlPlane } from '../config.ts'
import type { SignalClient } from './client.ts'

const FIXED =
  'the token comes from $WEBSIGNAL_CONTROL_PLANE_TOKEN, which only a restart changes (give it as a file through $WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE or control_plane.token_file to reload it)'

export interface CredentialReloadOptions {
  /** Undefined without a control plane, or in shadow mode. */
  client: SignalClient | undefined
  cp: ControlPlane | undefined
  logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** After a reload: the publisher tries again at once and certificate expiry is checked anew. */
  reloaded: () => void
}

export class CredentialReload {
  readonly #o: CredentialReloadOptions
  /** Why the last re-read after a refusal failed: said once, not after every refused batch. */
  #refusedReadError: string | undefined

  constructor(o: CredentialReloadOptions) {
    this.#o = o
  }

  /** SIGHUP: read every credential file again and log the outcome. True when the new ones are in use. */
  sighup(): boolean {
    const { client, cp, logger } = this.#o
    if (!client || !cp) {
      logger.info('SIGHUP changes nothing: no control-plane credential files; other settings are read at start')
      return false
    }
    try {
      const read = cp.readToken?.()
      for (const w of read?.warnings ?? []) logger.warn(w)
      if (read?.fixed && !client.hasCredentialFiles) {
        logger.info(`SIGHUP changes nothing: ${FIXED}; other settings are read at start`)
        return false
      }
      const before = client.token
      const { validTo } = client.reloadCredentials(read?.fixed ? undefined : read?.token)
      if (cp.auth.kind === 'mtls') logger.info({ valid_to: validTo }, 'control-plane credentials reloaded')
      else if (read?.fixed) logger.info(`control-plane CA reloaded; ${FIXED}`)
      else if (client.token !== before) {
        logger.info({ token_from: read?.from }, 'control-plane token reloaded: the next batches carry the new one')
      } else logger.info({ token_from: read?.from }, 'control-plane credentials reloaded; the token is unchanged')
    } catch (err) {
      logger.error(
        { reason: (err as Error).message },
        'control-plane credentials not reloaded; the previous ones stay in use',
      )
      return false
    }
    this.#refusedReadError = undefined
    this.#o.reloaded()
    return true
  }

  /**
   * The control plane refused a batch for its credentials: read the token again. True when it
   * changed (a rotated token was put in place) and the next batch carries the new one.
   */
  refused(): boolean {
    const { client, cp, logger } = this.#o
    if (!client || !cp?.readToken) return false
    try {
      const read = cp.readToken()
      if (read.fixed || read.token === client.token) return false
      client.reloadCredentials(read.token)
      logger.info(
        { token_from: read.from },
        'control-plane token reloaded after the control plane refused the previous one: the next batches carry the new one',
      )
    } catch (err) {
      const reason = (err as Error).message
      if (reason !== this.#refusedReadError) {
        logger.warn({ reason }, 'the control-plane token cannot be read again; the previous one stays in use')
      }
      this.#refusedReadError = reason
      return false
    }
    this.#refusedReadError = undefined
    this.#o.reloaded()
    return true
  }
}
