/**
 * Per-card callback context: an opaque value a sender attaches to a registered action
 * (`actions[i].context`), sealed with the committed action key and kept in
 * `action_contexts`, never in the stored card, so no inbox API can return it. Only the
 * dispatcher opens it, to send it back to the target with the invocation.
 */
export const contextAad = (notificationId: number, index: number) => `context:${notificationId}:${index}`
