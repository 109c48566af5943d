/**
 * Generates a JSON Schema (draft 2020-12) for one OCSF event class from the ocsf/ocsf-schema sources, for the tests
 * that validate our OCSF output (D47). It resolves what the OCSF server resolves: `extends` of classes and objects,
 * `$include`d profile attributes, the dictionary's attributes and types, enum merges, requirements and constraints.
 *
 *   bun scripts/ocsf-schema.ts <checkout-dir> [class]
 *   bun scripts/ocsf-schema.ts --git <git-dir> --ref <tag-or-commit> [class]
 *
 * The schema goes to stdout. No profile is applied: an attribute that only a profile brings in is left out, as the
 * OCSF server does when no profile is selected; the class's own `"profile": null` keeps one in. Objects are strict
 * (additionalProperties false) so a misspelled field fails; json_t values and attributes of type `object` stay open.
 * Objects are `$defs` referenced by `$ref`, so cyclic objects (process.parent_process, …) need no depth limit.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Obj = { [key: string]: Json }

interface Source {
  readonly read: (path: string) => string
  /** Every file path under `dir`, recursively, relative to the repository root. */
  readonly list: (dir: string) => ReadonlyArray<string>
  readonly describe: string
}

const checkoutSource = (root: string): Source => {
  const walk = (dir: string): Array<string> =>
    readdirSync(join(root, dir)).flatMap((name) => {
      const path = `${dir}/${name}`
      return statSync(join(root, path)).isDirectory() ? walk(path) : [path]
    })
  return { read: (path) => readFileSync(join(root, path), "utf8"), list: walk, describe: root }
}

const gitSource = (gitDir: string, ref: string): Source => {
  const git = (...args: Array<string>): string => {
    const run = Bun.spawnSync(["git", "--git-dir", gitDir, ...args])
    if (run.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${run.stderr.toString()}`)
    return run.stdout.toString()
  }
  return {
    read: (path) => git("show", `${ref}:${path}`),
    list: (dir) =>
      git("ls-tree", "-r", "--name-only", ref, "--", `${dir}/`)
        .split("\n")
        .filter((line) => line !== ""),
    describe: `${gitDir}@${ref}`,
  }
}

const isObj = (value: Json | undefined): value is Obj =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** OCSF's merge: objects merge key by key (so enums add up), anything else is replaced by the later value. */
const deepMerge = (base: Obj, over: Obj): Obj => {
  const out: Obj = { ...base }
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key]
    out[key] = isObj(prior) && isObj(value) ? deepMerge(prior, value) : value
  }
  return out
}

const sortKeys = (value: Json): Json => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (!isObj(value)) return value
  const out: Obj = {}
  for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key] ?? null)
  return out
}

export const generate = (source: Source, className: string): Obj => {
  const readJson = (path: string): Obj => JSON.parse(source.read(path)) as Obj
  const byName = (dir: string): Map<string, Obj> => {
    const out = new Map<string, Obj>()
    for (const path of source.list(dir)) {
      if (!path.endsWith(".json")) continue
      const def = readJson(path)
      if (typeof def.name === "string") out.set(def.name, def)
    }
    return out
  }
  const version = String(readJson("version.json").version)
  const dictionary = readJson("dictionary.json")
  const dictAttrs = dictionary.attributes as Obj
  const types = (dictionary.types as Obj).attributes as Obj
  const categories = readJson("categories.json").attributes as Obj
  const events = byName("events")
  const objects = byName("objects")

  /** Attributes a definition declares, its `$include`d files first (profile ones tagged with the profile). */
  const ownAttributes = (def: Obj): Obj => {
    const attrs = (def.attributes ?? {}) as Obj
    let out: Obj = {}
    const includes = attrs.$include
    for (const path of Array.isArray(includes) ? includes : []) {
      const file = readJson(String(path))
      const profile = file.meta === "profile" ? String(file.name) : null
      for (const [name, attr] of Object.entries((file.attributes ?? {}) as Obj)) {
        if (!isObj(attr)) continue
        out[name] = deepMerge((out[name] as Obj | undefined) ?? {}, { ...attr, profile: attr.profile ?? profile })
      }
    }
    const { $include: _, ...own } = attrs
    out = deepMerge(out, own)
    return out
  }

  /** A definition with its `extends` chain resolved: attributes merged, constraints of the nearest definer. */
  const resolve = (def: Obj, table: Map<string, Obj>): { attributes: Obj; constraints: Obj | undefined; def: Obj } => {
    const parentName = def.extends
    const parentDef = typeof parentName === "string" ? table.get(parentName) : undefined
    if (typeof parentName === "string" && parentName !== "object" && parentDef === undefined)
      throw new Error(`${String(def.name)} extends unknown ${parentName}`)
    const parent = parentDef ? resolve(parentDef, table) : { attributes: {}, constraints: undefined, def: {} }
    return {
      attributes: deepMerge(parent.attributes, ownAttributes(def)),
      constraints: isObj(def.constraints) ? def.constraints : parent.constraints,
      def: deepMerge(parent.def, def),
    }
  }

  // The observable type ids the OCSF server derives (observable.type_id's enum holds only 0 and 99 in the sources).
  const observableIds = new Set<number>([0, 99])
  const collectObservables = (attrs: Obj) => {
    for (const attr of Object.values(attrs))
      if (isObj(attr) && typeof attr.observable === "number") observableIds.add(attr.observable)
  }
  collectObservables(types)
  collectObservables(dictAttrs)
  for (const table of [objects, events]) {
    for (const def of table.values()) {
      if (typeof def.observable === "number") observableIds.add(def.observable)
      collectObservables((def.attributes ?? {}) as Obj)
    }
  }

  /** A dictionary type as JSON Schema keywords, following its `type` chain (ip_t → string_t, timestamp_t → long_t). */
  const scalar = (typeName: string): Obj => {
    const type = types[typeName]
    if (!isObj(type)) throw new Error(`unknown type ${typeName}`)
    const base: Obj =
      typeName === "string_t"
        ? { type: "string" }
        : typeName === "integer_t" || typeName === "long_t"
          ? { type: "integer" }
          : typeName === "float_t"
            ? { type: "number" }
            : typeName === "boolean_t"
              ? { type: "boolean" }
              : typeName === "json_t"
                ? {}
                : typeof type.type === "string"
                  ? scalar(type.type)
                  : {}
    if (Object.keys(base).length === 0 && typeName !== "json_t") throw new Error(`type ${typeName} has no base type`)
    const out: Obj = { ...base }
    if (typeof type.regex === "string") out.pattern = type.regex
    if (typeof type.max_len === "number") out.maxLength = type.max_len
    if (Array.isArray(type.range)) {
      out.minimum = type.range[0] ?? null
      out.maximum = type.range[1] ?? null
    }
    return out
  }

  const defs: Obj = {}
  const pending: Array<string> = []

  const attributeSchema = (name: string, local: Obj, owner: string): Json => {
    const dict = dictAttrs[name]
    if (!isObj(dict)) throw new Error(`${owner}.${name} is not in the dictionary`)
    const attr = deepMerge(dict, local)
    const typeName = String(attr.object_type ?? attr.type)
    let item: Obj
    if (typeName === "object") item = { type: "object" }
    else if (typeName in types) item = scalar(typeName)
    else if (objects.has(typeName)) {
      if (!(typeName in defs) && !pending.includes(typeName)) pending.push(typeName)
      item = { $ref: `#/$defs/${typeName}` }
    } else throw new Error(`${owner}.${name} has unknown type ${typeName}`)
    if (isObj(attr.enum) && item.type === "integer") {
      item.enum = Object.keys(attr.enum)
        .map(Number)
        .sort((a, b) => a - b)
    }
    if (owner === "observable" && name === "type_id") item.enum = [...observableIds].sort((a, b) => a - b)
    return attr.is_array === true ? { type: "array", items: item } : item
  }

  /** Properties, required list and constraints of a resolved definition, leaving out profile-only attributes. */
  const objectSchema = (owner: string, attributes: Obj, constraints: Obj | undefined): Obj => {
    const properties: Obj = {}
    const required: Array<string> = []
    for (const [name, local] of Object.entries(attributes)) {
      if (!isObj(local)) continue
      if (local.profile !== undefined && local.profile !== null) continue
      properties[name] = attributeSchema(name, local, owner)
      if (local.requirement === "required") required.push(name)
    }
    const out: Obj = { type: "object", properties, additionalProperties: false }
    if (required.length > 0) out.required = required.sort()
    const present = (names: Json | undefined) =>
      (Array.isArray(names) ? names : []).map(String).filter((n) => n in properties)
    const atLeastOne = present(constraints?.at_least_one)
    const justOne = present(constraints?.just_one)
    if (atLeastOne.length > 0) out.anyOf = atLeastOne.map((n) => ({ required: [n] }))
    if (justOne.length > 0) out.oneOf = justOne.map((n) => ({ required: [n] }))
    return out
  }

  const classDef = events.get(className)
  if (classDef === undefined) throw new Error(`no event class ${className}`)
  const resolved = resolve(classDef, events)
  const category = categories[String(resolved.def.category)]
  if (!isObj(category) || typeof category.uid !== "number") throw new Error(`class ${className} has no category`)
  const classUid = category.uid * 1000 + Number(classDef.uid)
  const root = objectSchema(className, resolved.attributes, resolved.constraints)
  const props = root.properties as Obj
  const activityIds = ((props.activity_id as Obj).enum as Array<number>) ?? []
  props.class_uid = { type: "integer", const: classUid }
  props.category_uid = { type: "integer", const: category.uid }
  props.type_uid = { type: "integer", enum: activityIds.map((id) => classUid * 100 + id) }

  while (pending.length > 0) {
    const name = pending.shift() as string
    const def = objects.get(name) as Obj
    const object = resolve(def, objects)
    defs[name] = { title: String(def.caption ?? name), ...objectSchema(name, object.attributes, object.constraints) }
  }

  return sortKeys({
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `https://schema.ocsf.io/${version}/classes/${className}.schema.json`,
    title: `OCSF ${version} ${String(classDef.caption)} (class_uid ${classUid}), no profiles`,
    $comment: `Generated by scripts/ocsf-schema.ts from ocsf/ocsf-schema version ${version}.`,
    ...root,
    $defs: defs,
  }) as Obj
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const flag = (name: string): string | undefined => {
    const at = args.indexOf(name)
    if (at < 0) return undefined
    const value = args[at + 1]
    args.splice(at, 2)
    return value
  }
  const gitDir = flag("--git")
  const ref = flag("--ref")
  const source =
    gitDir !== undefined
      ? gitSource(gitDir, ref ?? "HEAD")
      : args[0] !== undefined
        ? checkoutSource(args.shift() as string)
        : undefined
  if (source === undefined) {
    console.error("usage: bun scripts/ocsf-schema.ts (<checkout-dir> | --git <git-dir> --ref <ref>) [class]")
    process.exit(2)
  }
  const className = args[0] ?? "detection_finding"
  process.stdout.write(`${JSON.stringify(generate(source, className), null, 2)}\n`)
}
