/**
 * Rolling a compiled RPZ file out to the resolver processes one at a time. Each kresd
 * instance watches its own RPZ file (policy.rpz with the watch flag) and answers on a private
 * address besides the shared one. The new file is copied beside the instance's file and
 * renamed over it (the instance never sees half a file); the next instance is only touched once
 * this one answers the new generation's TXT record, so while one process parses (about 2 s for
 * 1M names) the others keep answering on the shared address.
 */
import { copyFile, rename, rm } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import dnsPacket from 'dns-packet'
import { GENERATION_NAME } from '../blocklists/rpz.ts'
import { type Address, exchange } from '../knot/dns.ts'

export interface ResolverInstance {
  /** The RPZ file this instance loads with the watch flag. */
  rpzFile: string
  /** Where this instance alone answers DNS. */
  address: Address
}

/** The generation id the instance answers from its loaded RPZ, or undefined. */
export async function loadedGeneration(address: Address, timeoutMs = 1000): Promise<string | undefined> {
  const id = Math.floor(Math.random() * 65536)
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type: 'TXT', name: GENERATION_NAME, class: 'IN' }],
  })
  const res = await exchange(address, packet, id, timeoutMs)
  const txt = (res.answers ?? []).find((a) => a.type === 'TXT') as dnsPacket.TxtAnswer | undefined
  if (!txt) return undefined
  const data = Array.isArray(txt.data) ? txt.data : [txt.data]
  return data.map((d) => (typeof d === 'string' ? d : Buffer.from(d).toString('utf8'))).join('')
}

/** Install `compiledFile` at every instance in turn; rejects naming the instance that did not load it. */
export async function rollOut(
  compiledFile: string,
  generation: string,
  instances: readonly ResolverInstance[],
  loadTimeoutMs: number,
): Promise<void> {
  for (const [i, instance] of instances.entries()) {
    const tmp = `${instance.rpzFile}.tmp-${process.pid}`
    try {
      await copyFile(compiledFile, tmp)
      await rename(tmp, instance.rpzFile)
    } catch (err) {
      await rm(tmp, { force: true })
      throw new Error(`cannot install the blocklist for resolver ${i + 1}: ${(err as Error).message}`)
    }
    const deadline = Date.now() + loadTimeoutMs
    let last = 'no answer'
    while (true) {
      try {
        // A process busy parsing does not answer: the query timing out is the expected wait.
        const loaded = await loadedGeneration(instance.address)
        if (loaded === generation) break
        last = loaded === undefined ? 'no generation record' : `generation ${loaded}`
      } catch (err) {
        last = (err as Error).message
      }
      if (Date.now() > deadline) {
        throw new Error(
          `resolver ${i + 1} (${instance.address.host}:${instance.address.port}) did not load the new blocklist within ${loadTimeoutMs} ms (${last})`,
        )
      }
      await delay(50)
    }
  }
}
