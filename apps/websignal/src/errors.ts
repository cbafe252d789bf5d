/**
 * Every coded error websignal reports (beside the kit's); each is documented in the README. What
 * stops startup (the store, the pattern lists) is a one-line `StartupError`, not a code.
 */
import { defineErrors } from '@gatehouse/kit'

export const errors = defineErrors({
  log_unreadable: { status: 400, message: (path: string, why: string) => `cannot read ${path}: ${why}` },
  stale_publisher_epoch: {
    status: 409,
    message: () => 'the control plane has seen a newer publisher epoch for this node; another instance publishes',
  },
})

export type ErrorCode = keyof typeof errors
