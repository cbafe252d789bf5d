/** Checks of CLI arguments shared by several commands. */

import { errors } from '../errors.ts'
import { FINGERPRINT_PATTERN } from '../wire/fingerprint-material.ts'

export const MAX_LABEL_LENGTH = 256

export function checkFingerprint(text: string): string {
  const fp = text.trim().toLowerCase()
  if (!FINGERPRINT_PATTERN.test(fp)) throw errors.invalid_fingerprint(text)
  return fp
}

export function checkLabel(label: string): string {
  if (label.length > MAX_LABEL_LENGTH) throw errors.invalid_label(`must be at most ${MAX_LABEL_LENGTH} characters`)
  // Labels are printed on terminals: no control characters.
  if (/[\u0000-\u001f\u007f-\u009f]/.test(label)) throw errors.invalid_label('must not contain control characters')
  return label
}
