import { max } from "d3-array"
import { geoEqualEarth, geoPath } from "d3-geo"
import { scaleLog } from "d3-scale"
import type { FeatureCollection, Geometry } from "geojson"
import { numericToAlpha2 } from "i18n-iso-countries/index"
import { feature } from "topojson-client"
import type { GeometryCollection, Topology } from "topojson-specification"
import atlas from "world-atlas/countries-110m.json"
import { ChartTable } from "./barChart.tsx"
import { formatCount } from "./format.ts"

/** Events of one country (ISO 3166 alpha-2, as enrichment stores it). */
export interface CountryValue {
  readonly country: string
  readonly n: number
}

interface Shape {
  /** ISO 3166 alpha-2, or undefined for the few shapes the atlas gives no code (Kosovo, Northern Cyprus, …). */
  readonly alpha2: string | undefined
  readonly name: string
  /** The shape's SVG path, projected once for every page. */
  readonly d: string
}

const WIDTH = 920
const HEIGHT = 410

/**
 * The map's shapes: world-atlas's 110m countries (Natural Earth, its ids ISO 3166 numeric, mapped to alpha-2 by
 * i18n-iso-countries), Antarctica left out (no honeypot traffic comes from there, and it takes a fifth of the map),
 * in the Equal Earth projection fitted to the chart, coordinates to one decimal: about 60 KB of path, made once.
 */
let shapes: ReadonlyArray<Shape> | undefined
const mapShapes = (): ReadonlyArray<Shape> => {
  if (shapes !== undefined) return shapes
  const topology = atlas as unknown as Topology<{ countries: GeometryCollection<{ name: string }> }>
  const all = feature(topology, topology.objects.countries) as FeatureCollection<Geometry, { name: string }>
  const land: FeatureCollection<Geometry, { name: string }> = {
    type: "FeatureCollection",
    features: all.features.filter((f) => f.id !== "010"),
  }
  const projection = geoEqualEarth().fitExtent(
    [
      [4, 4],
      [WIDTH - 4, HEIGHT - 4],
    ],
    land,
  )
  const path = geoPath(projection).digits(1)
  shapes = land.features.map((f) => ({
    alpha2: f.id === undefined ? undefined : numericToAlpha2(String(f.id)),
    name: f.properties.name,
    d: path(f) ?? "",
  }))
  return shapes
}

const regionNames = new Intl.DisplayNames(["en"], { type: "region", fallback: "code" })

/** A country's English name from its alpha-2 code (the code itself when unknown). */
export const countryName = (alpha2: string): string => {
  try {
    const name = regionNames.of(alpha2)
    return name === undefined || /^unknown/i.test(name) ? alpha2 : name
  } catch {
    return alpha2
  }
}

/** Lightest to darkest: the share of the busiest country, on a log scale (one country often dwarfs the rest). */
const LOW = "#cfe0f3"
const HIGH = "#123f80"

/**
 * A world map of events by the country of their source (a choropleth drawn on the server with d3-geo), a summary
 * for screen readers, a legend and a table view. Only called with at least one country.
 */
export const WorldMap = (props: { countries: ReadonlyArray<CountryValue>; title: string }) => {
  const byCode = new Map(props.countries.map((c) => [c.country, c.n]))
  const top = Math.max(1, max(props.countries, (c) => c.n) ?? 1)
  const colour = scaleLog<string>()
    .domain([1, Math.max(2, top)])
    .range([LOW, HIGH])
    .clamp(true)
  const first = props.countries[0]
  const summary =
    first === undefined
      ? `${props.title}: none`
      : `${props.title}: ${props.countries.length} ${props.countries.length === 1 ? "country" : "countries"}, the most from ${countryName(first.country)} (${formatCount(first.n)} events)`
  return (
    <div class="ov-chart ov-map">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary}>
        <title>{summary}</title>
        {mapShapes().map((s) => {
          const n = s.alpha2 === undefined ? undefined : byCode.get(s.alpha2)
          return n === undefined ? (
            <path class="ov-land" d={s.d} />
          ) : (
            <path class="ov-land ov-hit" d={s.d} fill={colour(n)}>
              <title>{`${s.name}: ${formatCount(n)} events`}</title>
            </path>
          )
        })}
      </svg>
      <p class="ov-legend small muted">
        <span class="ov-scale" aria-hidden="true" /> Fewer to more events (log scale, busiest {formatCount(top)}); grey:
        none
      </p>
      <ChartTable
        columns={["Country", "Code", "Events"]}
        rows={props.countries.map((c) => [countryName(c.country), c.country, formatCount(c.n)])}
      />
    </div>
  )
}
