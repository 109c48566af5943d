import { HttpRouter } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { Checkbox, decodeForm, OptionalText, Text } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { notFound } from "../responses.tsx"
import type { SignedIn } from "../session.ts"
import { SensorPage } from "./sensorPage.tsx"
import { SensorsPage } from "./sensorsPage.tsx"

/** Add a sensor: the service checks the name, the profile and the heartbeat. */
const AddSensorForm = Schema.Struct({ name: Text, profile: Text, heartbeatInterval: Text })
const RenameForm = Schema.Struct({ name: Text })
const HeartbeatForm = Schema.Struct({ heartbeatInterval: Text })
/** Rotate the token: the old one's grace period (empty: none), and whether to rotate again within a grace period. */
const RotateForm = Schema.Struct({
  grace: OptionalText,
  force: Checkbox("yes"),
})
type Fields = Record<string, string>

/** Revoke: only with its box ticked. */
const RevokeForm = Schema.Struct({ confirm: Checkbox("yes") })

/** Settings → Sensors: every user reads; administrators change, through SensorAdmin (tokens shown once). */
export const sensorRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sensorAdmin = yield* SensorAdmin
    const { page, action, flashTo, readFlash, refused } = kit

    const listSensors = page((s) =>
      Effect.gen(function* () {
        const sensors = yield* sensorAdmin.list(s.orgId)
        const flash = yield* readFlash(s)
        return html(
          <SensorsPage
            viewer={s.viewer}
            sensors={sensors}
            flash={flash}
            now={new Date()}
            ingestUrl={config.ingestUrl}
            appUrl={config.appUrl}
          />,
        )
      }),
    )

    const addSensor = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(AddSensorForm)(fields)
        const created = yield* sensorAdmin.create(s.orgId, form)
        return yield* flashTo(s, "/settings/sensors", {
          kind: "ok",
          text: `Sensor ${created.id} added.`,
          secret: { label: "Its ingest token.", value: created.token },
        })
      }).pipe(refused(s, "/settings/sensors")),
    )

    const showSensor = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        const sensor = (yield* sensorAdmin.list(s.orgId)).find((x) => x.id === id)
        if (sensor === undefined) return notFound(s.viewer)
        return html(<SensorPage viewer={s.viewer} sensor={sensor} flash={yield* readFlash(s)} now={new Date()} />)
      }),
    )

    // Each change of a sensor is given the sensor's id, the path of its page and the form's fields.
    const rename = (s: SignedIn, id: string, back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RenameForm)(fields)
        const done = yield* sensorAdmin.rename(id, form.name)
        return yield* flashTo(s, back, { kind: "ok", text: `Renamed to ${done.name}.` })
      })

    const setHeartbeat = (s: SignedIn, id: string, back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(HeartbeatForm)(fields)
        const done = yield* sensorAdmin.setHeartbeat(id, form.heartbeatInterval)
        const text =
          done.heartbeatIntervalSeconds === null
            ? "No heartbeat expected."
            : `A heartbeat every ${done.heartbeatIntervalSeconds} s is expected.`
        return yield* flashTo(s, back, { kind: "ok", text })
      })

    const rotate = (s: SignedIn, id: string, _back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RotateForm)(fields)
        const rotated = yield* sensorAdmin.rotate(id, form.grace, form.force)
        return yield* flashTo(s, "/settings/sensors", {
          kind: "ok",
          text: rotated.previousTokenValidUntil
            ? `Token rotated; the old one also works until ${rotated.previousTokenValidUntil}.`
            : "Token rotated; the old one no longer works.",
          secret: { label: "The new ingest token.", value: rotated.token },
        })
      })

    const revoke = (s: SignedIn, id: string, back: string, fields: Fields) =>
      Effect.gen(function* () {
        // An unticked box is told on the sensor's own page, where the box is.
        const form = yield* Effect.either(decodeForm(RevokeForm)(fields))
        if (Either.isLeft(form)) return yield* flashTo(s, back, { kind: "error", text: form.left.text })
        if (!form.right.confirm) {
          return yield* flashTo(s, back, { kind: "error", text: "Tick the box to confirm the revocation." })
        }
        yield* sensorAdmin.revoke(id)
        return yield* flashTo(s, "/settings/sensors", { kind: "ok", text: `Sensor ${id} revoked.` })
      })

    const CHANGES = { rename, heartbeat: setHeartbeat, rotate, revoke }

    /** POST /settings/sensors/<id>/<verb>: a verb the console does not know is the 404 page. */
    const changeSensor = action((s, fields) =>
      Effect.gen(function* () {
        const { id = "", verb = "" } = yield* HttpRouter.params
        const change = Object.hasOwn(CHANGES, verb) ? CHANGES[verb as keyof typeof CHANGES] : undefined
        if (change === undefined) return notFound(s.viewer)
        return yield* change(s, id, `/settings/sensors/${encodeURIComponent(id)}`, fields)
      }).pipe(refused(s, "/settings/sensors")),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/settings/sensors", listSensors),
      HttpRouter.post("/settings/sensors", addSensor),
      HttpRouter.get("/settings/sensors/:id", showSensor),
      HttpRouter.post("/settings/sensors/:id/:verb", changeSensor),
    )
  })
