import { DEFAULT_NETWORKS, NETWORK_LABEL_MAX, NETWORKS_MAX, type OwnNetwork } from "../../domain/networks.ts"
import { Csrf, DataTable, type Flash, type Viewer } from "../components.tsx"
import { MAX_BODY_BYTES } from "../http.ts"
import { isAdmin, SettingsLayout } from "../layout.tsx"

/**
 * Settings → Networks and Settings → Bait credentials: how the service judges the organization's incidents. A source
 * inside one of its networks is internal (its incident at least high, its texts say "from inside your network"); a
 * login with a planted credential makes its incident critical. Administrators change both; analysts read the
 * networks. Labels, usernames and "where it is planted" are an administrator's words: shown as typed, as text.
 */

/** Why the list an administrator sent was not saved: the line it could not read, as typed, or the service's words. */
export type NetworksError =
  | { readonly line: number; readonly reason: string; readonly text: string }
  | { readonly message: string }

const NetworksTable = ({ networks }: { networks: ReadonlyArray<OwnNetwork> }) => (
  <DataTable columns={["Network", "Label"]} empty="No networks: every source is judged external." rows={networks}>
    {(n) => (
      <tr>
        <td class="mono">{n.cidr}</td>
        <td>{n.label}</td>
      </tr>
    )}
  </DataTable>
)

const ErrorNotice = ({ error }: { error: NetworksError }) => (
  <div class="notice notice-error" role="alert" id="networks-error">
    {"line" in error ? (
      <>
        <p>
          <strong>Nothing was saved: a problem on line {error.line}.</strong> {error.reason}.
        </p>
        <p>
          Line {error.line}: <code class="typed-line">{error.text}</code>
        </p>
        <p class="small">
          <a href="#networks-text">Your text is below</a> as you typed it: correct the line and save again.
        </p>
      </>
    ) : (
      <p>
        <strong>Nothing was saved.</strong> {error.message}
      </p>
    )}
  </div>
)

/** The private ranges, as the reset offers them. */
const DefaultRanges = () => (
  <>
    {DEFAULT_NETWORKS.map((n, i) => (
      <>
        {i > 0 && ", "}
        <span class="mono">{n.cidr}</span>
      </>
    ))}
  </>
)

export const NetworksPage = (props: {
  viewer: Viewer
  flash: Flash | undefined
  networks: ReadonlyArray<OwnNetwork>
  /** False while the organization has the default private ranges. */
  custom: boolean
  /** What the text area holds: the list as stored, or what was sent when it could not be read. */
  text: string
  error?: NetworksError | undefined
}) => (
  <SettingsLayout viewer={props.viewer} tab="networks" title="Networks" flash={props.flash}>
    {props.error && <ErrorNotice error={props.error} />}
    <p>
      Your own networks. A decoy touched from inside one of them is the strongest sign of a breach: the machine that did
      it is already past your perimeter. Its incident is at least <strong>high</strong>, and its title, narrative and
      recommended action say "from inside your network (label)". Every other source is external.
    </p>
    <p class="muted small" id="networks-state">
      {props.custom
        ? `This organization's own list: ${props.networks.length} ${props.networks.length === 1 ? "network" : "networks"}.`
        : "The default list: the private ranges, until an administrator saves a list of your own."}
    </p>
    {isAdmin(props.viewer) && (
      <>
        <form class="panel" method="post" action="/settings/networks" id="edit">
          <h2>Edit the list</h2>
          <Csrf token={props.viewer.csrfToken} />
          <div class="field">
            <label for="networks-text">One network a line: an address or CIDR, a space, then its label</label>
            <textarea
              id="networks-text"
              name="networks"
              class="wide mono"
              rows={Math.min(20, Math.max(8, props.text.split("\n").length + 2))}
              spellcheck={false}
              autocomplete="off"
              aria-describedby="networks-help"
              aria-invalid={props.error ? "true" : undefined}
            >
              {/* A browser drops one line break right after <textarea>: this one, never the text's own first line. */}
              {`\n${props.text}`}
            </textarea>
            <div id="networks-help" class="muted small">
              For example <code>10.20.0.0/16 Office LAN</code> or <code>2001:db8:5::/48 Lab</code>; a single address is
              a /32 (IPv4) or /128 (IPv6). The most specific network names a source. <code>#</code> starts a comment. At
              most {NETWORKS_MAX} networks, labels of at most {NETWORK_LABEL_MAX} characters, and{" "}
              {MAX_BODY_BYTES / 1024} KiB in all.
            </div>
          </div>
          <p class="small">
            Saving judges again, at once, every incident whose source moves inside or outside (or to another network);
            an open incident that becomes more severe is escalated and alerted like any other.
          </p>
          <button type="submit">Save</button>
        </form>
        {props.custom && (
          <details class="panel" id="reset">
            <summary>Reset to the private ranges…</summary>
            <form method="post" action="/settings/networks/reset">
              <Csrf token={props.viewer.csrfToken} />
              <p>
                Replaces this list ({props.networks.length} {props.networks.length === 1 ? "network" : "networks"}) with{" "}
                <DefaultRanges />, and judges the incidents again. Copy the list first if you may want it back.
              </p>
              <button type="submit" class="danger">
                Reset to the private ranges
              </button>
            </form>
          </details>
        )}
      </>
    )}
    <h2>{props.error ? "The list as saved (unchanged)" : "The list as saved"}</h2>
    <NetworksTable networks={props.networks} />
  </SettingsLayout>
)
