// The client's one confirmation dialog, asked before a change that cannot be undone (revoking a
// webhook or an action target, removing a member). The browser's own confirm() cannot follow
// the page's theme, names the origin instead of the question, and stacks its buttons as the
// browser likes; this is a modal <dialog> of the page: focus moves into it (on Cancel), Tab
// stays inside, Escape or a click beside it cancels, and focus goes back to the control that
// opened it, or to the one standing for it if the view was redrawn meanwhile (focus.js).

import { h } from './dom.js'
import { returnFocus } from './focus.js'

let asking // the dialog on screen; a second question cancels the first

/**
 * Ask `title` (a question) with `message` (what happens); resolves true when the reader chooses
 * `action` (the button's label, a verb: "Revoke webhook"), false on Cancel, Escape or a click on
 * the backdrop. Text only: names from users are never parsed as HTML.
 *
 * @example onclick: async (e) => { if (!(await confirmDialog({ title: 'Revoke this webhook?', message: 'Deliveries stop at once.', action: 'Revoke webhook' }, e.currentTarget))) return; … }
 */
export function confirmDialog({ title, message, action }, opener = document.activeElement) {
  // (Pass the clicked control as `opener`: a click does not focus a button in every browser.)
  asking?.close()
  return new Promise((resolve) => {
    let answer = false
    const cancel = h('button', { type: 'button', autofocus: true, onclick: () => dialog.close() }, 'Cancel')
    const confirm = h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          answer = true
          dialog.close()
        },
      },
      action,
    )
    const dialog = h(
      'dialog',
      {
        class: 'confirm',
        // A question that interrupts, with its answer buttons: screen readers read it out whole.
        role: 'alertdialog',
        'aria-labelledby': 'confirm-title',
        'aria-describedby': 'confirm-message',
        // The dialog's own box is its padding-free frame: a click that lands on the dialog
        // element itself is on the backdrop around the box.
        onclick: (e) => e.target === dialog && dialog.close(),
        onclose: () => {
          dialog.remove()
          // (A dialog closed because another question replaced it leaves focus in that one.)
          if (asking === dialog) {
            asking = undefined
            returnFocus(opener)
          }
          resolve(answer)
        },
      },
      h(
        'div',
        { class: 'confirm-box' },
        h('h2', { id: 'confirm-title' }, title),
        h('p', { id: 'confirm-message' }, message),
        h('div', { class: 'confirm-buttons' }, cancel, confirm),
      ),
    )
    asking = dialog
    document.body.append(dialog)
    dialog.showModal()
    // showModal focuses the autofocus control; said again for browsers that focus the dialog.
    cancel.focus()
  })
}

/**
 * Cancel the question on screen, if any, with focus left where it is: the page behind it is
 * gone (the sign-in form, after the session ended), and a modal left open would cover the form
 * and keep it inert. The question answers false, so nothing it asked about is done.
 */
export function dismissConfirmation() {
  const dialog = asking
  asking = undefined // (no focus back to the opener: it is no longer on the page)
  dialog?.close()
}
