import { Command } from "@effect/cli"
import { Effect } from "effect"
import { SCOPES } from "../../domain/scopes.ts"
import { ApiKeyAdmin } from "../ApiKeyAdmin.ts"
import { argument, asAdmin, flag, json, optionalFlag, print, required, table } from "./shared.ts"

const org = flag("org", "<org-id>", "the organization")

const create = Command.make(
  "create",
  {
    org,
    name: flag("name", "<name>", "what the key is for, 1 to 200 printable characters"),
    scopes: flag(
      "scopes",
      "incidents:read,events:read",
      `what the key may read, comma-separated, of: ${SCOPES.join(", ")} (intel:read: the firewall blocklist; audit:read: the audit trail)`,
    ),
    expires: optionalFlag("expires", "<RFC 3339>", "when the key stops working (default: never)"),
    json,
  },
  ({ org, name, scopes, expires, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const key = yield* (yield* ApiKeyAdmin).create(yield* required(org, "--org"), { name, scopes, expires })
        return yield* print(json, key, () => `key ${key.id} created. Store it now; it is not shown again:\n${key.key}`)
      }),
    ),
).pipe(Command.withDescription("create an API key; the key is printed only here"))

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* ApiKeyAdmin).list(yield* required(org, "--org"))
      return yield* print(json, rows, () => table(rows))
    }),
  ),
).pipe(Command.withDescription("list keys (never the key value)"))

const revoke = Command.make("revoke", { keyId: argument("key-id", "the key"), json }, ({ keyId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const result = yield* (yield* ApiKeyAdmin).revoke(yield* required(keyId, "<key-id>"))
      return yield* print(json, result, () => `key ${result.id} revoked`)
    }),
  ),
).pipe(Command.withDescription("revoke a key; effective on the next request"))

export const key = Command.make("key").pipe(
  Command.withDescription("API keys"),
  Command.withSubcommands([create, list, revoke]),
)
