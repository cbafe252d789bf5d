/**
 * Optimistic concurrency on the wire: the revision a mutation names, from If-Match (RFC 9110
 * entity tag, quoted or bare) or the body field expected_revision; both given must agree.
 */
import { kitErrors } from '@gatehouse/kit/errors.ts'
import { errors } from './errors.ts'

/** If-Match (with or without quotes) and expected_revision: the one revision the caller names. */
export function expectedRevision(ifMatch: string | undefined, bodyRevision: string | undefined): string | undefined {
  let header: string | undefined
  if (ifMatch !== undefined) {
    header = ifMatch.trim().replace(/^W\//, '')
    // One revision is named: "*" (any) or a list would read as a revision that is never current.
    if (header === '*' || /^"[^"]*"\s*,/.test(header)) {
      throw kitErrors.invalid_request(
        `If-Match must name one revision ("<revision>"), not ${JSON.stringify(header)}: * and lists are not supported`,
      )
    }
    if (header.startsWith('"') && header.endsWith('"') && header.length >= 2) header = header.slice(1, -1)
  }
  if (header !== undefined && bodyRevision !== undefined && header !== bodyRevision) {
    throw errors.revision_disagreement(header, bodyRevision)
  }
  return header ?? bodyRevision
}

/** Whether If-None-Match names the current revision (the GET then answers 304 without a body). */
export function notModified(ifNoneMatch: string | string[] | undefined, revision: string): boolean {
  if (typeof ifNoneMatch !== 'string') return false
  return ifNoneMatch
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === `"${revision}"` || t === revision)
}
