/**
 * The compiled artefact: one response-policy zone file (the RPZ format kresd's policy.rpz
 * reads). `name CNAME .` answers NXDOMAIN, `*.name CNAME .` covers subdomains, `CNAME
 * rpz-passthru.` exempts an allowed name. A TXT record at GENERATION_NAME carries the
 * generation id, so a rollout can ask one resolver process which file it has loaded.
 */
import { open, rename, rm } from 'node:fs/promises'
import { NameList } from './name-set.ts'

/** Answered (TXT) from the RPZ itself; `.invalid` (RFC 6761) is never a real name. */
export const GENERATION_NAME = 'generation.dnsctl.invalid'

const CHUNK = 1 << 20
const BLOCK_TAIL = Buffer.from('. CNAME .\n*.')
const BLOCK_END = Buffer.from('. CNAME .\n')

/** The names of an RPZ: the compiled list, or plain strings (tools and tests). */
export interface RpzContent {
  blocked: NameList | readonly string[]
  passthru: readonly string[]
}

/** Write the RPZ to `path` atomically (temp file, fsync, rename); returns the bytes written. */
export async function writeRpz(path: string, list: RpzContent, generation: string): Promise<number> {
  const tmp = `${path}.tmp-${process.pid}`
  const handle = await open(tmp, 'w', 0o644)
  let bytes = 0
  const out = Buffer.allocUnsafe(CHUNK)
  let used = 0
  const flush = async () => {
    if (used === 0) return
    await handle.write(out, 0, used)
    bytes += used
    used = 0
  }
  const text = async (s: string) => {
    if (used + s.length * 3 > CHUNK) await flush()
    used += out.write(s, used)
  }
  try {
    await text(`; compiled by dnsctl; do not edit (replaced at every blocklist refresh)
$TTL 60
@ IN SOA localhost. nobody.invalid. ${Math.floor(Date.now() / 1000)} 3600 900 86400 60
${GENERATION_NAME}. TXT "${generation}"
`)
    const blocked = list.blocked
    if (blocked instanceof NameList) {
      // Octets straight from the name set: `name. CNAME .\n*.name. CNAME .\n`, no strings.
      const { bytes: names, starts, lengths } = blocked.set
      for (let k = 0; k < blocked.size; k++) {
        const i = blocked.indexes[k]!
        const s = starts[i]!
        const len = lengths[i]!
        if (used + 2 * len + 32 > CHUNK) await flush()
        out.set(names.subarray(s, s + len), used)
        used += len
        used += BLOCK_TAIL.copy(out, used)
        out.set(names.subarray(s, s + len), used)
        used += len
        used += BLOCK_END.copy(out, used)
      }
    } else {
      for (const name of blocked) await text(`${name}. CNAME .\n*.${name}. CNAME .\n`)
    }
    for (const name of list.passthru) await text(`${name}. CNAME rpz-passthru.\n*.${name}. CNAME rpz-passthru.\n`)
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
