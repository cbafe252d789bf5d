/**
 * Rolling a compiled RPZ file out to the resolver processes one at a time. Each kresd
 * instance watches its own RPZ file (policy.rpz with the watch flag) and answers on a private
 * address besides the shared one. The new file is copied beside the instance's file and
 * renamed over it (the instance never sees half a file); the next instance is only touched once
 * this one answers the new generation's TXT record, so while one process parses (about 2 s for
 * 1M names) the others keep answering on the shared address.
 *
 * A process that is not running is told from a busy one at once: nothing is bound to its
 * address, so the kernel answers the query with ICMP port unreachable (ECONNREFUSED on the
 * connected socket), while a process busy loading keeps its socket and merely does not answer
 * yet. One instance that fails (not running, or not loaded within the timeout) does not keep the
 * list from the instances after it; every failure is reported.
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
  // Connected: a refused query (nothing listening) rejects at once with ECONNREFUSED.
  const id = Math.floor(Math.random() * 65536)
  const packet = dnsPacket.encode({
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type: 'TXT', name: GENERATION_NAME, class: 'IN' }],
  })
  const res = await exchange(address, packet, id, timeoutMs, { connect: true })
  const txt = (res.answers ?? []).find((a) => a.type === 'TXT') as dnsPacket.TxtAnswer | undefined
  if (!txt) return undefined
  const data = Array.isArray(txt.data) ? txt.data : [txt.data]
  return data.map((d) => (typeof d === 'string' ? d : Buffer.from(d).toString('utf8'))).join('')
}

/**
 * How long an instance's address must go on refusing before it counts as not running: rides
 * over a service manager restarting it (kresd binds its sockets before loading the RPZ), and
 * is still nothing beside the load timeout (default 2 minutes).
 */
export const REFUSED_GRACE_MS = 1000

function resolverName(i: number, instance: ResolverInstance): string {
  return `resolver ${i + 1} (${instance.address.host}:${instance.address.port})`
}

/** Wait until one instance answers `generation`; rejects saying why it did not. */
async function awaitLoaded(
  i: number,
  instance: ResolverInstance,
  generation: string,
  loadTimeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + loadTimeoutMs
  let last = 'no answer'
  let refusedSince: number | undefined
  while (true) {
    try {
      // A process busy parsing does not answer: the query timing out is the expected wait.
      const loaded = await loadedGeneration(instance.address)
      if (loaded === generation) return
      last = loaded === undefined ? 'no generation record' : `generation ${loaded}`
      refusedSince = undefined
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
        refusedSince ??= Date.now()
        if (Date.now() - refusedSince >= REFUSED_GRACE_MS) {
          throw new Error(
            `${resolverName(i, instance)} is not running (nothing listens on its address: connection refused)`,
          )
        }
      } else {
        refusedSince = undefined
        last = (err as Error).message
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${resolverName(i, instance)} did not load the new blocklist within ${loadTimeoutMs} ms (${last})`,
      )
    }
    await delay(50)
  }
}

/**
 * Install `compiledFile` at every instance in turn. Returns one message per instance that did
 * not load it (empty when all did); an instance that failed does not stop the ones after it.
 */
export async function rollOut(
  compiledFile: string,
  generation: string,
  instances: readonly ResolverInstance[],
  loadTimeoutMs: number,
): Promise<string[]> {
  const failures: string[] = []
  for (const [i, instance] of instances.entries()) {
    const tmp = `${instance.rpzFile}.tmp-${process.pid}`
    try {
      await copyFile(compiledFile, tmp)
      await rename(tmp, instance.rpzFile)
    } catch (err) {
      await rm(tmp, { force: true })
      failures.push(`cannot install the blocklist for ${resolverName(i, instance)}: ${(err as Error).message}`)
      continue
    }
    try {
      await awaitLoaded(i, instance, generation, loadTimeoutMs)
    } catch (err) {
      failures.push((err as Error).message)
    }
  }
  return failures
}
