import { Command } from "@effect/cli"
import { Effect } from "effect"
import { Backup } from "../Backup.ts"
import { argument, asAdmin, json, print, required } from "./shared.ts"

const file = argument("file", "the backup file")

export const backup = Command.make("backup", { file, json }, ({ file, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* Backup).backup(yield* required(file, "<file>"))
      return yield* print(json, done, () => {
        const rows = Object.values(done.tables).reduce((a, b) => a + b, 0)
        return `backup written to ${done.file}: ${rows} rows of ${Object.keys(done.tables).length} tables, ${done.bytes} bytes in ${done.durationMs} ms (migration ${done.migration}, key id ${done.keyId})`
      })
    }),
  ),
).pipe(
  Command.withDescription(
    "write a consistent backup of the whole database to a new <file> (gzip'd JSON lines, mode 0600, with a MAC " +
      "under SECRET_KEY) while the service runs; it holds sealed secrets and hashes (the MAC is not encryption): " +
      "keep SECRET_KEY apart from it",
  ),
)

export const restore = Command.make("restore", { file, json }, ({ file, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* Backup).restore(yield* required(file, "<file>"))
      return yield* print(
        json,
        done,
        () =>
          `restored ${done.rows} rows of ${Object.keys(done.tables).length} tables from ${done.file} in ${done.durationMs} ms (migration ${done.migration}; its MAC checked); start the server with the same key`,
      )
    }),
    // The backed-up service's key, never one generated now.
    "existing",
  ),
).pipe(
  Command.withDescription(
    "check the backup's MAC, then load it into an empty database (a fresh DATA_DIR or a new database) of the " +
      "same migration level, in one transaction; needs the backup's SECRET_KEY (or its secret.key in DATA_DIR), " +
      "and the server starts with it",
  ),
)
