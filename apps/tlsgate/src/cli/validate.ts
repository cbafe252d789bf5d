/** Checks of CLI arguments shared by several commands. */
import { errors } from '../errors.ts'

export const MAX_LABEL_LENGTH = 256
/** A JA4 fingerprint, e.g. `t13d1516h2_8daaf6152771_d8a2da3f94cd` (case-insensitive on input). */
export const JA4_PATTERN = /^[tqd][0-9a-z]{2}[di]\d{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/

export function checkFingerprint(text: string): string {
  const fp = text.trim().toLowerCase()
  if (!JA4_PATTERN.test(fp)) throw errors.invalid_fingerprint(text)
  return fp
}

export function checkLabel(label: string): string {
  if (label.length > MAX_LABEL_LENGTH) throw errors.invalid_label(`must be at most ${MAX_LABEL_LENGTH} characters`)
  // Labels are printed on terminals: no control characters.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(label)) throw errors.invalid_label('must not contain control characters')
  return label
}
