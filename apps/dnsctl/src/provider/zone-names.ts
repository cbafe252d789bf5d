/** Provider zone names as callers give them: lowercase, no trailing dot, LDH labels. */
export function normalizeZoneName(raw: string): string {
  const name = raw.trim().toLowerCase().replace(/\.$/, '')
  if (name.length === 0 || name.length > 253) throw new Error(`${JSON.stringify(raw)} is not a zone name`)
  for (const label of name.split('.')) {
    if (!/^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/.test(label)) {
      throw new Error(`${JSON.stringify(raw)} is not a zone name (label ${JSON.stringify(label)})`)
    }
  }
  return name
}
