/**
 * What a decision's fingerprint may be, by the kind of gate it is for. The wire pattern
 * (FINGERPRINT_PATTERN) is the union of every gate's form, so `zzz` or an SSH fingerprint typed
 * in upper case passed it: the decision was stored, pulled and kept by the gate as an entry that
 * matches no client (the gate computes lower case) and that its own CLI refuses to address.
 * A TLS gate's JA4 typed in upper case is stored as the gate computes it too.
 */
import type { NodeKind } from '../db/schema.ts'
import { errors } from '../errors.ts'

/** The SSH gate's fingerprint: the first 16 bytes of SHA-256, in hex (spec, "Fingerprint construction"). */
const SSH_FINGERPRINT = /^[0-9a-f]{32}$/i
/** tlsgate's JA4 (its README, "Fingerprints"), written in lower case by the gate. */
const JA4 = /^[tqd][0-9a-z]{2}[di]\d{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/i

/** The fingerprint as the gate writes it (lower case), or undefined when it is not of the gate's form. */
export function canonicalFingerprint(kind: NodeKind, fingerprint: string): string | undefined {
  if (kind === 'sshgate') return SSH_FINGERPRINT.test(fingerprint) ? fingerprint.toLowerCase() : undefined
  if (kind === 'tlsgate') return JA4.test(fingerprint) ? fingerprint.toLowerCase() : undefined
  return undefined
}

const FORM: Partial<Record<NodeKind, string>> = {
  sshgate: 'an SSH gate fingerprint is 32 hexadecimal characters (sshproxy list shows them)',
}

/** A short, printable rendering of what was given (it goes into a message and on a terminal). */
const shown = (fingerprint: string) => JSON.stringify(fingerprint.slice(0, 80))

/**
 * The fingerprint a new verdict is stored under: the gate's own form, in lower case. An SSH
 * gate's form is the spec's, so anything else is refused. A TLS gate's that is not a JA4 is
 * taken as written: the spec leaves the TLS fingerprint open, and a gate of another make may
 * report another form (which it then matches as written).
 */
export function decisionFingerprint(instanceId: string, kind: NodeKind, fingerprint: string): string {
  const canonical = canonicalFingerprint(kind, fingerprint)
  if (canonical !== undefined) return canonical
  if (kind === 'tlsgate') return fingerprint
  throw errors.invalid_fingerprint(`${shown(fingerprint)} is not a fingerprint of ${instanceId}: ${FORM[kind]}`)
}

/** The fingerprint an existing decision is looked up by: the canonical form, else as written (older rows). */
export function lookupFingerprint(kind: NodeKind, fingerprint: string): string {
  return canonicalFingerprint(kind, fingerprint) ?? fingerprint
}
