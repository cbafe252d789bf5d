/**
 * The compiled artefact: one response-policy zone file (the RPZ format kresd's policy.rpz
 * reads). `name CNAME .` answers NXDOMAIN, `*.name CNAME .` covers subdomains, `CNAME
 * rpz-passthru.` exempts an allowed name. A TXT record at GENERATION_NAME carries the
 * generation id, so a rollout can ask one resolver process which file it has loaded.
 */
import { open, rename, rm } from 'node:fs/promises'
import type { CompiledBlocklist } from './compile.ts'

/** Answered (TXT) from the RPZ itself; `.invalid` (RFC 6761) is never a real name. */
export const GENERATION_NAME = 'generation.dnsctl.invalid'

const CHUNK = 1 << 16

/** Write the RPZ to `path` atomically (temp file, fsync, rename); returns the bytes written. */
export async function writeRpz(path: string, list: CompiledBlocklist, generation: string): Promise<number> {
  const tmp = `${path}.tmp-${process.pid}`
  const handle = await open(tmp, 'w', 0o644)
  let bytes = 0
  try {
    let buf = `; compiled by dnsctl; do not edit (replaced at every blocklist refresh)
$TTL 60
@ IN SOA localhost. nobody.invalid. ${Math.floor(Date.now() / 1000)} 3600 900 86400 60
${GENERATION_NAME}. TXT "${generation}"
`
    const flush = async () => {
      bytes += Buffer.byteLength(buf)
      await handle.write(buf)
      buf = ''
    }
    for (const name of list.blocked) {
      buf += `${name}. CNAME .\n*.${name}. CNAME .\n`
      if (buf.length > CHUNK) await flush()
    }
    for (const name of list.passthru) {
      buf += `${name}. CNAME rpz-passthru.\n*.${name}. CNAME rpz-passthru.\n`
      if (buf.length > CHUNK) await flush()
    }
    await flush()
    await handle.sync()
  } catch (err) {
    await handle.close()
    await rm(tmp, { force: true })
    throw err
  }
  await handle.close()
  await rename(tmp, path)
  return bytes
}
