import type { Viewer } from "./components.tsx"
import { html, MAX_BODY_BYTES } from "./http.ts"
import { Layout } from "./layout.tsx"

/** The console's fixed answers: pages with a status, never a secret. */

/** An unknown, used or expired set-password link, for GET and POST alike: which of them is never said. */
export const linkExpired = () =>
  html(
    <MessagePage
      title="Link expired"
      text="This link has expired or was already used. Ask an administrator for a new one (Settings → Users, or `bun run admin user reset`)."
    />,
    410,
  )
/** An unknown id and another organization's get this same page, so nothing tells that the other exists. */
export const notFound = (viewer?: Viewer) => html(<NotFoundPage viewer={viewer} />, 404)
export const forbidden = (text: string, viewer?: Viewer) =>
  html(<MessagePage title="Not allowed" text={text} viewer={viewer} />, 403)
export const sessionExpired = () =>
  html(
    <MessagePage
      title="Session expired"
      text="Your session has ended. Sign in again, then repeat the action."
      link={{ href: "/sign-in", label: "Sign in" }}
    />,
    401,
  )
export const tooLarge = () =>
  html(
    <MessagePage title="Too large" text={`A console request body may hold at most ${MAX_BODY_BYTES / 1024} KiB.`} />,
    413,
    { connection: "close" },
  )
export const badRequest = () =>
  html(
    <MessagePage
      title="Bad request"
      text="This request holds a value the console does not accept (a control character, or a value too long)."
    />,
    400,
  )
export const serverError = () =>
  html(<MessagePage title="Something went wrong" text="The request could not be completed. It has been logged." />, 500)

/** A plain message page: expired links, sessions, refusals, unknown ids. */
export const MessagePage = (props: {
  title: string
  text: string
  viewer?: Viewer | undefined
  link?: { href: string; label: string } | undefined
}) => (
  <Layout title={props.title} viewer={props.viewer} section="none">
    <div class="panel">
      <h1>{props.title}</h1>
      <p>{props.text}</p>
      {props.link && <a href={props.link.href}>{props.link.label}</a>}
    </div>
  </Layout>
)

export const NotFoundPage = ({ viewer }: { viewer?: Viewer | undefined }) => (
  <MessagePage
    title="Not found"
    text="There is nothing here, or it belongs to another organization. Check the link, or look it up in the incident list."
    viewer={viewer}
    link={{ href: "/incidents", label: "Go to the incidents" }}
  />
)
