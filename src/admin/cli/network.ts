import { Command } from "@effect/cli"
import { Effect } from "effect"
import { JudgementAdmin } from "../JudgementAdmin.ts"
import { asAdmin, flag, json, print, required, STDIN, usage } from "./shared.ts"

const org = flag("org", "<org-id>", "the organization")

/** The largest network list `network set` reads: far above 500 networks with their labels. */
const NETWORKS_MAX_BYTES = 1024 * 1024

/** A stream's text, or undefined as soon as it passes `max` bytes (nothing more is read: a file may be /dev/zero). */
const readBounded = async (stream: ReadableStream<Uint8Array>, max: number): Promise<string | undefined> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of stream) {
    size += chunk.byteLength
    if (size > max) return undefined
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const view = yield* (yield* JudgementAdmin).networks(yield* required(org, "--org"))
      return yield* print(json, view, () =>
        [
          view.custom ? "the organization's networks:" : "the default private ranges (no list was set):",
          ...view.networks.map((n) => `  ${n.cidr.padEnd(20)} ${n.label}`),
        ].join("\n"),
      )
    }),
  ),
).pipe(
  Command.withDescription(
    "the organization's own networks (a source inside one is internal: its incidents are at least high); the " +
      "private ranges until set",
  ),
)

/** Replaces the list with `text`'s lines, or with null goes back to the default ranges; either way judges again. */
const setNetworks = (json: boolean, orgId: string | undefined, read: Effect.Effect<string | null, unknown, never>) =>
  asAdmin(
    Effect.gen(function* () {
      const id = yield* required(orgId, "--org")
      const done = yield* (yield* JudgementAdmin).setNetworks(id, yield* read)
      return yield* print(
        json,
        { networks: done.networks, custom: done.custom, rejudged: done.rejudged },
        () =>
          `${done.networks.length} networks${done.custom ? "" : " (the default private ranges)"}; ` +
          `${done.rejudged} incidents judged again`,
      )
    }),
  )

const set = Command.make(
  "set",
  { org, networks: flag("networks", "<file|->", 'a file of lines "<cidr> <label>"; - reads standard input'), json },
  ({ org, networks, json }) =>
    setNetworks(
      json,
      org,
      Effect.gen(function* () {
        const from = yield* required(networks, "--networks")
        const read = yield* Effect.tryPromise({
          try: () => readBounded(from === STDIN ? Bun.stdin.stream() : Bun.file(from).stream(), NETWORKS_MAX_BYTES),
          catch: () => usage(`--networks: cannot read ${from === STDIN ? "standard input" : from}`),
        })
        if (read === undefined) return yield* usage("--networks: the list is larger than 1 MiB")
        return read
      }),
    ),
).pipe(
  Command.withDescription(
    'replace the list with the file\'s lines, one "<cidr> <label>" each (- reads standard input); its incidents ' +
      "are judged again at once",
  ),
)

const reset = Command.make("reset", { org, json }, ({ org, json }) =>
  setNetworks(json, org, Effect.succeed(null)),
).pipe(Command.withDescription("back to the default private ranges; incidents judged again"))

export const network = Command.make("network").pipe(
  Command.withDescription("the organization's own networks"),
  Command.withSubcommands([list, set, reset]),
)
