// The header shared by every page: sign-out.
import { api, explain } from './api.js'

const button = document.getElementById('sign-out')
button?.addEventListener('click', async () => {
  button.disabled = true
  try {
    await api('POST', '/api/v1/auth/logout')
    location.assign('/')
  } catch (err) {
    button.disabled = false
    alert(explain(err))
  }
})
