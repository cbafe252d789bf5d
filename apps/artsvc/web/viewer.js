// The viewer's version switcher: changing the version navigates at once (the form's
// Show button does the same without script).
import './header.js'

// The switch loads a new page, which would start the focus at its top: a keyboard user going
// through versions with the arrow keys would have to Tab back to the switcher after each one.
// The new page puts the focus back on the switcher instead.
const FOCUS_SWITCHER = 'artsvc:focus-version-switcher'

const select = document.getElementById('version-select')
select?.addEventListener('change', () => select.form.requestSubmit())
select?.form.addEventListener('submit', () => sessionStorage.setItem(FOCUS_SWITCHER, '1'))
if (select && sessionStorage.getItem(FOCUS_SWITCHER)) {
  sessionStorage.removeItem(FOCUS_SWITCHER)
  select.focus()
}
