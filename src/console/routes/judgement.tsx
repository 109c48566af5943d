import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { JudgementAdmin } from "../../admin/JudgementAdmin.ts"
import { formatNetworkList, parseNetworkList } from "../../domain/networks.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { BaitPage, type NetworksError, NetworksPage, RemoveBaitPage } from "../pages/judgement.tsx"
import { notFound } from "../responses.tsx"
import type { SignedIn } from "../session.ts"

/** The longest piece of a refused line the error notice quotes back. */
const QUOTED_LINE_MAX = 300

const count = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

/** What a save or a reset did, in the notice after it. */
const savedText = (done: { readonly networks: ReadonlyArray<unknown>; readonly rejudged: number }, reset: boolean) =>
  `${reset ? "Reset to the private ranges" : "Saved"}: ${count(done.networks.length, "network", "networks")}. ` +
  (done.rejudged === 0
    ? "No incident's source moved inside or outside, so none was judged again."
    : `${count(done.rejudged, "incident was", "incidents were")} judged again.`)

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

/**
 * Settings → Networks (administrators change, analysts read) and Settings → Bait credentials (administrators only),
 * every change through JudgementAdmin (audited; a change of the networks judges the incidents again). A list that
 * cannot be read comes back on the same page, the line named and the text kept as typed; nothing is saved.
 */
export const judgementRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const judgement = yield* JudgementAdmin
    const { page, action, flashTo, readFlash, refused } = kit

    /** The networks page with what was sent and why it was not saved (400: nothing changed). */
    const notSaved = (s: SignedIn, text: string, error: NetworksError) =>
      Effect.map(judgement.networks(s.orgId), (view) =>
        html(
          <NetworksPage
            viewer={s.viewer}
            flash={undefined}
            networks={view.networks}
            custom={view.custom}
            text={text}
            error={error}
          />,
          400,
        ),
      )

    return HttpRouter.empty.pipe(
      HttpRouter.get(
        "/settings/networks",
        page((s) =>
          Effect.gen(function* () {
            const view = yield* judgement.networks(s.orgId)
            return html(
              <NetworksPage
                viewer={s.viewer}
                flash={yield* readFlash(s)}
                networks={view.networks}
                custom={view.custom}
                text={formatNetworkList(view.networks)}
              />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/networks",
        action((s, form) =>
          Effect.gen(function* () {
            const text = form.networks ?? ""
            // Read here first to name the line and keep the text; the service reads it again and decides.
            const read = parseNetworkList(text)
            if ("problem" in read) {
              const line = text.split("\n")[read.problem.line - 1] ?? ""
              return yield* notSaved(s, text, {
                line: read.problem.line,
                reason: sentence(read.problem.reason),
                text: line.length > QUOTED_LINE_MAX ? `${line.slice(0, QUOTED_LINE_MAX)}…` : line,
              })
            }
            const done = yield* judgement
              .setNetworks(s.orgId, text)
              .pipe(Effect.catchTag("Invalid", (e) => Effect.succeed({ refused: e.message })))
            if ("refused" in done) {
              return yield* notSaved(s, text, { message: done.refused.replace(/^--networks /, "The list's ") })
            }
            return yield* flashTo(s, "/settings/networks", { kind: "ok", text: savedText(done, false) })
          }).pipe(refused(s, "/settings/networks")),
        ),
      ),
      HttpRouter.post(
        "/settings/networks/reset",
        action((s) =>
          Effect.gen(function* () {
            const done = yield* judgement.setNetworks(s.orgId, null)
            return yield* flashTo(s, "/settings/networks", { kind: "ok", text: savedText(done, true) })
          }).pipe(refused(s, "/settings/networks")),
        ),
      ),

      // --- Settings → Bait credentials (administrators only: where bait is planted is for those who plant it) -------
      HttpRouter.get(
        "/settings/bait",
        page(
          (s) =>
            Effect.gen(function* () {
              const baits = yield* judgement.baitList(s.orgId)
              return html(<BaitPage viewer={s.viewer} flash={yield* readFlash(s)} baits={baits} now={new Date()} />)
            }),
          true,
        ),
      ),
      HttpRouter.post(
        "/settings/bait",
        action((s, form) =>
          Effect.gen(function* () {
            const added = yield* judgement.baitAdd(s.orgId, {
              username: form.username,
              password: form.password,
              label: form.label,
            })
            return yield* flashTo(s, "/settings/bait", {
              kind: "ok",
              text: `Bait credential ${JSON.stringify(added.username)} added: a login with it makes its incident critical. Its password is not kept.`,
            })
          }).pipe(refused(s, "/settings/bait")),
        ),
      ),
      HttpRouter.get(
        "/settings/bait/:id/remove",
        page(
          (s) =>
            Effect.gen(function* () {
              const { id } = yield* HttpRouter.params
              const bait = (yield* judgement.baitList(s.orgId)).find((b) => b.id === id)
              if (bait === undefined) return notFound(s.viewer)
              return html(<RemoveBaitPage viewer={s.viewer} bait={bait} />)
            }),
          true,
        ),
      ),
      HttpRouter.post(
        "/settings/bait/:id/remove",
        action((s) =>
          Effect.gen(function* () {
            const { id = "" } = yield* HttpRouter.params
            yield* judgement.baitRemove(id)
            return yield* flashTo(s, "/settings/bait", {
              kind: "ok",
              text: "Bait credential removed: later logins with it are no longer marked as bait.",
            })
          }).pipe(refused(s, "/settings/bait")),
        ),
      ),
    )
  })
