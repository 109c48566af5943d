/**
 * A statement's text and parameters. The API's list and lookup statements are built by pure functions that return
 * one, so the EXPLAIN test (test/db/explain.test.ts) plans exactly the statements the API runs.
 */
export interface SqlText {
  readonly text: string
  readonly params: ReadonlyArray<unknown>
}
