import { HttpRouter } from "@effect/platform"
import { Effect, Schema } from "effect"
import { JudgementAdmin } from "../../admin/JudgementAdmin.ts"
import { formatNetworkList, parseNetworkList } from "../../domain/networks.ts"
import { Blank, decodeForm, Text } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { type FieldWords, invalidText } from "../refusals.ts"
import { notFound } from "../responses.tsx"
import type { SignedIn } from "../session.ts"
import { BaitPage, RemoveBaitPage } from "./baitPage.tsx"
import { type NetworksError, NetworksPage } from "./networksPage.tsx"

const NetworksForm = Schema.Struct({ networks: Blank })
const BaitForm = Schema.Struct({ username: Text, password: Text, label: Text })

/** The networks page names its one input "the list"; a refusal of a line reads "The list's line 3: …". */
const NETWORKS_WORDS: FieldWords = { networks: "The list's" }

/** The longest piece of a refused line the error notice quotes back. */
const QUOTED_LINE_MAX = 300

const count = (n: number, one: string, many: string) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

/** What a save or a reset of the networks did, in the notice after it. */
const savedText = (done: { readonly networks: ReadonlyArray<unknown>; readonly rejudged: number }, reset: boolean) =>
  `${reset ? "Reset to the private ranges" : "Saved"}: ${count(done.networks.length, "network", "networks")}. ` +
  (done.rejudged === 0
    ? "No incident's source moved inside or outside, so none was judged again."
    : `${count(done.rejudged, "incident was", "incidents were")} judged again.`)

const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`
/**
 * Settings → Networks and Settings → Bait credentials: how the service judges the organization's incidents, every
 * change through JudgementAdmin (audited). A change of the networks judges the incidents again; a list that cannot be
 * read comes back on the same page, the line named and the text kept as typed, nothing saved. Analysts read the
 * networks; bait credentials are for administrators only (where bait is planted is for those who plant it).
 */
export const judgementRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const judgement = yield* JudgementAdmin
    const { page, action, flashTo, readFlash, refused } = kit

    // --- Networks ---------------------------------------------------------------------------------------------------

    /** The networks page with what was sent and why it was not saved (400: nothing changed). */
    const networksNotSaved = (s: SignedIn, text: string, error: NetworksError) =>
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

    const showNetworks = page((s) =>
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
    )

    const saveNetworks = action((s, fields) =>
      Effect.gen(function* () {
        const text = (yield* decodeForm(NetworksForm)(fields)).networks
        // Read here first to name the line and keep the text; the service reads it again and decides.
        const read = parseNetworkList(text)
        if ("problem" in read) {
          const line = text.split("\n")[read.problem.line - 1] ?? ""
          return yield* networksNotSaved(s, text, {
            line: read.problem.line,
            reason: sentence(read.problem.reason),
            text: line.length > QUOTED_LINE_MAX ? `${line.slice(0, QUOTED_LINE_MAX)}…` : line,
          })
        }
        const done = yield* judgement
          .setNetworks(s.orgId, text)
          .pipe(Effect.catchTag("Invalid", (e) => Effect.succeed({ refused: invalidText(e, NETWORKS_WORDS) })))
        if ("refused" in done) {
          return yield* networksNotSaved(s, text, { message: done.refused })
        }
        return yield* flashTo(s, "/settings/networks", { kind: "ok", text: savedText(done, false) })
      }).pipe(refused(s, "/settings/networks")),
    )

    const resetNetworks = action((s) =>
      Effect.gen(function* () {
        const done = yield* judgement.setNetworks(s.orgId, null)
        return yield* flashTo(s, "/settings/networks", { kind: "ok", text: savedText(done, true) })
      }).pipe(refused(s, "/settings/networks")),
    )

    // --- Bait credentials (administrators only) ---------------------------------------------------------------------

    const listBait = page((s) =>
      Effect.gen(function* () {
        const baits = yield* judgement.baitList(s.orgId)
        return html(<BaitPage viewer={s.viewer} flash={yield* readFlash(s)} baits={baits} now={new Date()} />)
      }),
    )

    const addBait = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(BaitForm)(fields)
        const added = yield* judgement.baitAdd(s.orgId, form)
        return yield* flashTo(s, "/settings/bait", {
          kind: "ok",
          text: `Bait credential ${JSON.stringify(added.username)} added: a login with it makes its incident critical. Its password is not kept.`,
        })
      }).pipe(refused(s, "/settings/bait")),
    )

    const confirmRemoveBait = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        const bait = (yield* judgement.baitList(s.orgId)).find((b) => b.id === id)
        if (bait === undefined) return notFound(s.viewer)
        return html(<RemoveBaitPage viewer={s.viewer} bait={bait} />)
      }),
    )

    const removeBait = action((s) =>
      Effect.gen(function* () {
        const { id = "" } = yield* HttpRouter.params
        yield* judgement.baitRemove(id)
        return yield* flashTo(s, "/settings/bait", {
          kind: "ok",
          text: "Bait credential removed: later logins with it are no longer marked as bait.",
        })
      }).pipe(refused(s, "/settings/bait")),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/settings/networks", showNetworks),
      HttpRouter.post("/settings/networks", saveNetworks),
      HttpRouter.post("/settings/networks/reset", resetNetworks),
      HttpRouter.get("/settings/bait", listBait),
      HttpRouter.post("/settings/bait", addBait),
      HttpRouter.get("/settings/bait/:id/remove", confirmRemoveBait),
      HttpRouter.post("/settings/bait/:id/remove", removeBait),
    )
  })
