// The console's only script (every page works without it). Conveniences: copy buttons, live refresh.

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-copy]") : null
  if (!button) return
  const target = document.getElementById(button.getAttribute("data-copy") || "")
  if (target && navigator.clipboard) {
    navigator.clipboard.writeText(target.textContent || "").then(() => {
      button.textContent = "Copied"
    })
  }
})
// Incidents list: ask every 10 s whether anything changed since the newest incident shown; reload when it did.
const live = document.querySelector("[data-live-since]")
if (live) {
  const since = live.getAttribute("data-live-since") || ""
  const status = document.getElementById("live-status")
  if (status) status.textContent = "Live: checking for new activity every 10 s."
  setInterval(() => {
    fetch(`/live/incidents?since=${encodeURIComponent(since)}`, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : { changed: false }))
      .then((body) => {
        const active = document.activeElement
        const typing = active && (active.tagName === "INPUT" || active.tagName === "SELECT")
        if (body.changed && !typing) location.reload()
      })
      .catch(() => {})
  }, 10000)
}
