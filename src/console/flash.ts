import { randomBytes } from "node:crypto"
import { Effect, Option } from "effect"
import { type AdminError, isAdminError } from "../admin/errors.ts"
import { sha256 } from "../domain/crypto.ts"
import { Keys } from "../platform/keys.ts"
import { ConsoleUsersRepo } from "../repos/ConsoleUsersRepo.ts"
import type { Flash } from "./components.tsx"
import { FormRefused } from "./forms.ts"
import { seeOther } from "./http.ts"
import { type FieldWords, forbiddenText, refusalText } from "./refusals.ts"
import { forbidden, notFound } from "./responses.tsx"
import { request, type SignedIn } from "./session.ts"

const FLASH_TTL_MS = 10 * 60_000

/**
 * What a POST tells the page it redirects to (a flash), read once by the same session, sealed (it may hold a secret
 * shown once); and how a refusal of the admin services, or a form field that could not be read, is told.
 */
export const makeFlash = Effect.gen(function* () {
  const users = yield* ConsoleUsersRepo
  const { sealer } = yield* Keys

  const flashTo = (s: SignedIn, path: string, flash: Flash) =>
    Effect.gen(function* () {
      const id = randomBytes(16).toString("base64url")
      const now = new Date()
      yield* users.pruneFlashes(now)
      yield* users.insertFlash({
        id,
        sessionHash: sha256(s.token),
        body: sealer.seal(new TextEncoder().encode(JSON.stringify(flash))),
        expiresAt: new Date(now.getTime() + FLASH_TTL_MS),
      })
      return seeOther(`${path}${path.includes("?") ? "&" : "?"}flash=${id}`)
    })

  const readFlash = (s: SignedIn) =>
    Effect.gen(function* () {
      const req = yield* request
      const id = new URL(req.url, "http://console").searchParams.get("flash")
      if (id === null || id.length > 64) return undefined
      const body = yield* users.takeFlash(id, sha256(s.token), new Date())
      if (Option.isNone(body)) return undefined
      const opened = sealer.open(body.value)
      return opened === undefined ? undefined : (JSON.parse(new TextDecoder().decode(opened)) as Flash)
    })

  /**
   * A refusal of the admin services (errors.ts) becomes the page's error notice, worded by refusals.ts with the
   * form's names for its inputs (`words`, where they differ from the console's usual ones); a refusal never holds a
   * secret. An unknown id, or another organization's, gets the 404 page as a GET of it would; a role that may not,
   * the 403 page. A form field that could not be read (forms.ts) is named in the notice.
   */
  const refused =
    (s: SignedIn, path: string, words: FieldWords = {}) =>
    <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.catchIf(
        effect,
        (e): e is Extract<E, AdminError | FormRefused> => isAdminError(e) || e instanceof FormRefused,
        (error) => {
          const e: AdminError | FormRefused = error
          if (e._tag === "FormRefused") return flashTo(s, path, { kind: "error", text: e.text })
          if (e._tag === "NotFound") return Effect.succeed(notFound(s.viewer))
          if (e._tag === "Forbidden") return Effect.succeed(forbidden(forbiddenText(e), s.viewer))
          return flashTo(s, path, { kind: "error", text: refusalText(e, words) })
        },
      )

  return { flashTo, readFlash, refused } as const
})
export type Flashes = Effect.Effect.Success<typeof makeFlash>
