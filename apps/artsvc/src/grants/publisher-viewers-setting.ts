/**
 * The ARTSVC_PUBLISHER_VIEWERS setting's parser, apart from the grant logic in
 * publisher-viewers.ts, so the configuration (which every `artsvc --help` loads) imports no
 * database or error modules.
 */

export type PublisherViewers = Record<string, string[]>

/** Parse the setting; returns the problems instead of throwing (config.ts lists them all). */
export function parsePublisherViewers(raw: string | undefined): { value: PublisherViewers; problems: string[] } {
  if (raw === undefined || raw.trim() === '') return { value: {}, problems: [] }
  const name = 'ARTSVC_PUBLISHER_VIEWERS'
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (err) {
    return { value: {}, problems: [`${name}: not valid JSON (${(err as Error).message})`] }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { value: {}, problems: [`${name}: must be a JSON object mapping publisher subjects to arrays of subjects`] }
  const problems: string[] = []
  const value: PublisherViewers = {}
  for (const [publisher, recipients] of Object.entries(parsed)) {
    if (publisher === '') problems.push(`${name}: a publisher subject is empty`)
    if (!Array.isArray(recipients) || !recipients.every((r) => typeof r === 'string' && r !== '')) {
      problems.push(`${name}: the recipients of ${JSON.stringify(publisher)} must be an array of non-empty subjects`)
      continue
    }
    value[publisher] = [...new Set(recipients as string[])]
  }
  return { value, problems }
}
