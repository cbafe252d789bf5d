// The viewer's version switcher: changing the version navigates at once (the form's
// Show button does the same without script).
import './header.js'

const select = document.getElementById('version-select')
select?.addEventListener('change', () => select.form.requestSubmit())
