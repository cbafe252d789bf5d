/** Every coded error websignal reports (beside the kit's); each is documented in the README. */
import { defineErrors } from '@gatehouse/kit'

export const errors = defineErrors({
  store_unreachable: { status: 503, message: (why: string) => `the store is unreachable: ${why}` },
  store_schema_mismatch: { status: 503, message: (why: string) => why },
  pattern_invalid: { status: 400, message: (why: string) => why },
  log_unreadable: { status: 400, message: (path: string, why: string) => `cannot read ${path}: ${why}` },
  stale_publisher_epoch: {
    status: 409,
    message: () => 'the control plane has seen a newer publisher epoch for this node; another instance publishes',
  },
})

export type ErrorCode = keyof typeof errors
