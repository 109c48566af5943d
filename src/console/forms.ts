import { Data, Effect, Either, ParseResult, Schema } from "effect"

/**
 * Console forms read with a Schema each: the route decodes the fields it was sent into the values it works with, and
 * a field that does not decode is named in an error notice (flash.ts `refused` shows it on the page the form came
 * from). What the admin services check themselves (a name's length, an address) is passed on as text and worded
 * from their refusal; a form's schema checks what only the form knows (a checkbox, a count the page carried).
 */

/** A field of a form that could not be read: the field's name in the form, and the notice that says so. */
export class FormRefused extends Data.TaggedError("FormRefused")<{ readonly field: string; readonly text: string }> {}

/** A text field as sent; absent when the form did not send it (the service then says it is required). */
export const Text = Schema.UndefinedOr(Schema.String)

/** A text field read as "" when the form did not send it. */
export const Blank = Schema.optionalWith(Schema.String, { default: () => "" })

/** A text field where an empty value means "not given" (the service's default). */
export const OptionalText = Schema.transform(Schema.UndefinedOr(Schema.String), Schema.UndefinedOr(Schema.String), {
  strict: true,
  decode: (s) => (s === "" ? undefined : s),
  encode: (s) => s,
})

/** A checkbox: true when the form sends its `value`, false for anything else (nothing sent: not ticked). */
export const Checkbox = <V extends string>(value: V) =>
  Schema.optionalWith(
    Schema.transform(Schema.String, Schema.Boolean, {
      strict: true,
      decode: (sent) => sent === value,
      encode: (ticked) => (ticked ? value : ""),
    }),
    { default: () => false },
  )

/** The first value of each key (a query's, a form's), as a form is read. */
export const firstValues = (entries: Iterable<readonly [string, string]>): Record<string, string> => {
  const fields: Record<string, string> = {}
  for (const [k, v] of entries) if (!(k in fields)) fields[k] = v
  return fields
}

/** The text of a form's first field that did not decode: its own message, or the field named as not accepted. */
const noticeOf = (error: ParseResult.ParseError, labels: Readonly<Record<string, string>>) => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  const field = String(issue?.path[0] ?? "")
  const own = issue?.message
  // A message a field's schema carries is written for people; Schema's own ("Expected …, actual …") is not.
  const text =
    own !== undefined && !/^Expected |^is missing$|^Unexpected /.test(own)
      ? own
      : `${labels[field] ?? `The field ${JSON.stringify(field)}`} is not accepted.`
  return new FormRefused({ field, text })
}

/**
 * A form's fields decoded with `schema`. `labels` are the form's words for its fields, for a field whose schema
 * carries no message of its own.
 */
export const decodeForm =
  <A, I>(schema: Schema.Schema<A, I, never>, labels: Readonly<Record<string, string>> = {}) =>
  (fields: unknown): Effect.Effect<A, FormRefused> =>
    Either.match(Schema.decodeUnknownEither(schema, { errors: "first" })(fields), {
      onLeft: (error) => Effect.fail(noticeOf(error, labels)),
      onRight: (value) => Effect.succeed(value),
    })
