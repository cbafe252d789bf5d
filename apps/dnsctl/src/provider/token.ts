/**
 * The provider API token, read from DNSCTL_PROVIDER_TOKEN_FILE at every use (a rotated token
 * needs no restart). The file must belong to root or to the user dnsctl runs as, and neither
 * group nor others may read or write it: a token others can read is refused, not used.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs'
import { errors } from '../errors.ts'

const MAX_TOKEN_BYTES = 4096

export function readToken(file: string | undefined): string {
  if (file === undefined) throw errors.provider_not_configured('DNSCTL_PROVIDER_TOKEN_FILE is not set')
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (err) {
    throw errors.provider_not_configured(
      `cannot open the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    )
  }
  try {
    // fstat on the open descriptor: the checked file is the one read.
    const st = fstatSync(fd)
    if (!st.isFile()) throw errors.provider_token_unsafe(file, 'it is not a regular file')
    if ((st.mode & 0o077) !== 0) {
      throw errors.provider_token_unsafe(
        file,
        `mode ${(st.mode & 0o777).toString(8).padStart(4, '0')} lets group or others use it (chmod 600)`,
      )
    }
    const uid = process.getuid?.()
    if (st.uid !== 0 && uid !== undefined && st.uid !== uid) {
      throw errors.provider_token_unsafe(file, `it belongs to uid ${st.uid}, neither root nor this process (${uid})`)
    }
    if (st.size > MAX_TOKEN_BYTES)
      throw errors.provider_token_unsafe(file, `it is larger than ${MAX_TOKEN_BYTES} bytes`)
    const token = readFileSync(fd, 'utf8').trim()
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw errors.provider_token_unsafe(file, 'it must hold one token: printable ASCII without spaces')
    }
    return token
  } finally {
    closeSync(fd)
  }
}
