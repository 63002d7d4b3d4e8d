// GitHub's OpenAPI description of api.github.com (from @octokit/openapi): routing of
// requests to operations, validation of requests, and validation of the emulator's own
// responses. Schemas are compiled lazily, once per operation and location, and cached.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const require = createRequire(import.meta.url);
export const SPEC_FILE = require.resolve('@octokit/openapi/generated/api.github.com.json');

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];
const SPEC_ID = 'github-openapi';

// Keywords that only document (or that ajv cannot use as OpenAPI means them).
const DROP = new Set(['nullable', 'discriminator', 'example', 'examples', 'description', 'deprecated', 'readOnly', 'writeOnly', 'externalDocs', 'xml', 'title']);

// OpenAPI 3.0 schema object -> JSON Schema as ajv reads it.
//  - `nullable: true` becomes a `null` type (or an anyOf with null when there is no `type`);
//  - `oneOf` becomes `anyOf`: GitHub's description has oneOf alternatives that overlap (several
//    nullable branches, integer next to number), so oneOf would reject values it documents;
//  - local `$ref`s point into the registered description;
//  - with `closeObjects` (request bodies only, and only the inline part), objects that list
//    their properties get `additionalProperties: false`, so a misspelled field (which GitHub
//    silently ignores) is reported.
export function toJsonSchema(s, closeObjects = false) {
  if (Array.isArray(s)) return s.map((x) => toJsonSchema(x, closeObjects));
  if (!s || typeof s !== 'object') return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (DROP.has(k) || k.startsWith('x-')) continue;
    if (k === '$ref') {
      out.$ref = typeof v === 'string' && v.startsWith('#/') ? SPEC_ID + v : v;
    } else if (k === 'properties' || k === 'patternProperties') {
      out[k] = Object.fromEntries(Object.entries(v).map(([n, x]) => [n, toJsonSchema(x, closeObjects)]));
    } else if (k === 'oneOf' || k === 'anyOf') {
      const alts = toJsonSchema(v, closeObjects);
      if (out.anyOf) out.allOf = [...(out.allOf || []), { anyOf: alts }];
      else out.anyOf = alts;
    } else if (k === 'items' || k === 'additionalProperties' || k === 'not' || k === 'allOf') {
      out[k] = toJsonSchema(v, closeObjects);
    } else {
      out[k] = v;
    }
  }
  if (closeObjects && out.properties && !('additionalProperties' in out) && !out.allOf && !out.anyOf && !out.$ref) {
    out.additionalProperties = false;
  }
  if (s.nullable === true) {
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    } else if (Object.keys(out).length > 0) {
      return { anyOf: [out, { type: 'null' }] };
    }
  }
  return out;
}

// Order of path templates: at each segment a literal beats a parameter, which beats a
// parameter that may span several segments (`x-multi-segment`, e.g. git/ref/{ref}).
function segmentRank(seg, multi) {
  if (!seg.includes('{')) return 0;
  const names = [...seg.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  return names.some((n) => multi.has(n)) ? 2 : 1;
}

function escapeRegex(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class OpenApi {
  constructor() {
    const t0 = process.hrtime.bigint();
    this.spec = JSON.parse(readFileSync(SPEC_FILE, 'utf8'));
    this.ajv = new Ajv({
      strict: false,
      allErrors: true,
      validateSchema: false,
      addUsedSchema: false,
      logger: { log() {}, warn() {}, error: (...a) => console.error(...a) },
    });
    addFormats(this.ajv);
    this.ajv.addFormat('repo.nwo', /^[^/\s]+\/[^/\s]+$/);
    for (const f of ['int32', 'int64', 'double', 'float', 'binary', 'byte', 'password']) {
      if (!this.ajv.formats[f]) this.ajv.addFormat(f, true);
    }
    // Only component schemas are $ref targets from inside schemas; convert them once.
    const schemas = {};
    for (const [name, sch] of Object.entries(this.spec.components.schemas)) schemas[name] = toJsonSchema(sch);
    this.ajv.addSchema({ $id: SPEC_ID, components: { schemas } });
    this.cache = new Map();
    this.buildRoutes();
    this.loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  }

  resolve(obj) {
    let x = obj;
    for (let i = 0; x && x.$ref && i < 10; i++) {
      const parts = x.$ref.replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      x = parts.reduce((o, p) => (o ? o[p] : undefined), this.spec);
    }
    return x;
  }

  buildRoutes() {
    this.routes = new Map(); // method -> [{template, regex, names, op, rank}]
    this.operations = new Map(); // operationId -> {method, template, op}
    for (const [template, item] of Object.entries(this.spec.paths)) {
      const shared = item.parameters || [];
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const params = [...shared, ...(op.parameters || [])].map((p) => this.resolve(p));
        const multi = new Set(params.filter((p) => p.in === 'path' && p['x-multi-segment']).map((p) => p.name));
        const names = [];
        const segs = template.split('/').slice(1);
        const rx = segs
          .map((seg) =>
            seg
              .split(/(\{[^}]+\})/)
              .map((part) => {
                const m = /^\{([^}]+)\}$/.exec(part);
                if (!m) return escapeRegex(part);
                names.push(m[1]);
                return multi.has(m[1]) ? '(.+)' : '([^/]+)';
              })
              .join(''),
          )
          .join('/');
        const route = {
          method: method.toUpperCase(),
          template,
          regex: new RegExp('^/' + rx + '$'),
          names,
          op,
          params,
          rank: segs.map((s) => segmentRank(s, multi)),
        };
        if (!this.routes.has(route.method)) this.routes.set(route.method, []);
        this.routes.get(route.method).push(route);
        this.operations.set(op.operationId, route);
      }
    }
    for (const list of this.routes.values()) {
      list.sort((a, b) => {
        const n = Math.max(a.rank.length, b.rank.length);
        for (let i = 0; i < n; i++) {
          const x = a.rank[i] ?? -1;
          const y = b.rank[i] ?? -1;
          if (x !== y) return x - y;
        }
        return 0;
      });
    }
  }

  // -> {route, pathParams} or null. `path` is the raw (still percent-encoded) path.
  match(method, path) {
    for (const route of this.routes.get(method) || []) {
      const m = route.regex.exec(path);
      if (!m) continue;
      const pathParams = {};
      let ok = true;
      route.names.forEach((n, i) => {
        try {
          pathParams[n] = decodeURIComponent(m[i + 1]);
        } catch {
          ok = false;
        }
      });
      if (ok) return { route, pathParams };
    }
    return null;
  }

  compiled(key, make) {
    let v = this.cache.get(key);
    if (v === undefined) {
      const schema = make();
      v = schema ? this.ajv.compile(schema) : null;
      this.cache.set(key, v);
    }
    return v;
  }

  static errorsText(errors, where) {
    return (errors || []).map((e) => {
      let msg = `${where}${e.instancePath} ${e.message}`;
      if (e.keyword === 'additionalProperties') msg += `: "${e.params.additionalProperty}" (GitHub ignores fields it does not know)`;
      else if (e.keyword === 'enum') msg += `: ${JSON.stringify(e.params.allowedValues)}`;
      return msg;
    });
  }

  // Coerce a string from the URL to the type the parameter's schema asks for.
  static coerce(schema, raw) {
    const type = Array.isArray(schema?.type) ? schema.type.find((t) => t !== 'null') : schema?.type;
    if (type === 'integer') return /^-?\d+$/.test(raw) ? Number(raw) : raw;
    if (type === 'number') return raw !== '' && !Number.isNaN(Number(raw)) ? Number(raw) : raw;
    if (type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
    return raw;
  }

  checkParam(route, p, value, violations) {
    const schema = this.resolve(p.schema) || {};
    let v;
    if (schema.type === 'array') {
      const items = this.resolve(schema.items) || {};
      v = value.flatMap((x) => x.split(',')).map((x) => OpenApi.coerce(items, x));
    } else {
      if (value.length > 1) {
        violations.push(`${p.in} parameter "${p.name}" given ${value.length} times`);
        return undefined;
      }
      v = OpenApi.coerce(schema, value[0]);
    }
    const validate = this.compiled(`${route.op.operationId} ${p.in} ${p.name}`, () => toJsonSchema(p.schema || {}));
    if (validate && !validate(v)) violations.push(...OpenApi.errorsText(validate.errors, `${p.in} parameter "${p.name}"`));
    return v;
  }

  // Validates a request against its operation. Returns {violations, params, query, body}.
  validateRequest(route, pathParams, searchParams, headers, rawBody) {
    const violations = [];
    const params = {};
    const query = {};
    for (const p of route.params.filter((x) => x.in === 'path')) {
      if (!(p.name in pathParams)) {
        violations.push(`path parameter "${p.name}" missing`);
        continue;
      }
      params[p.name] = this.checkParam(route, p, [pathParams[p.name]], violations);
    }
    const byName = new Map(route.params.filter((x) => x.in === 'query').map((p) => [p.name, p]));
    const given = new Map();
    for (const [k, v] of searchParams) {
      const name = k.endsWith('[]') ? k.slice(0, -2) : k;
      if (!given.has(name)) given.set(name, []);
      given.get(name).push(v);
    }
    for (const [name, values] of given) {
      const p = byName.get(name);
      if (!p) {
        violations.push(`unknown query parameter "${name}" (known: ${[...byName.keys()].join(', ') || 'none'})`);
        continue;
      }
      query[name] = this.checkParam(route, p, values, violations);
    }
    for (const p of byName.values()) {
      if (p.required && !given.has(p.name)) violations.push(`query parameter "${p.name}" is required`);
    }
    for (const p of route.params.filter((x) => x.in === 'header' && x.required)) {
      if (headers[p.name.toLowerCase()] === undefined) violations.push(`header "${p.name}" is required`);
    }
    if (!headers.authorization) violations.push('header "Authorization" missing');
    if (!headers['user-agent']) violations.push('header "User-Agent" missing (GitHub rejects requests without one)');

    let body;
    const hasBody = rawBody.length > 0;
    const rb = this.resolve(route.op.requestBody);
    const jsonMedia = rb?.content && Object.keys(rb.content).find((c) => /json/.test(c));
    if (!rb) {
      if (hasBody) violations.push(`${route.method} ${route.template} takes no request body, but one was sent`);
    } else if (!hasBody) {
      if (rb.required) violations.push('request body required');
    } else if (jsonMedia) {
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch (e) {
        violations.push(`request body is not valid JSON: ${e.message}`);
      }
      if (body !== undefined) {
        const validate = this.compiled(`${route.op.operationId} body`, () =>
          toJsonSchema(this.resolve(rb.content[jsonMedia].schema) || {}, true),
        );
        if (validate && !validate(body)) violations.push(...OpenApi.errorsText(validate.errors, 'body'));
      }
    }
    return { violations, params, query, body };
  }

  // Errors of a response body against the documented response of that status ([] when
  // the status is not documented or documents no JSON body).
  validateResponse(route, status, body) {
    const responses = route.op.responses || {};
    const r = this.resolve(responses[String(status)]);
    if (!r) return [];
    const media = r.content && Object.keys(r.content).find((c) => /json/.test(c));
    if (!media) {
      // GitHub's description leaves out the (JSON) body of many error statuses; only a 204
      // must really be empty.
      return status === 204 && body !== undefined && body !== null ? [`status 204 sent with a body`] : [];
    }
    const validate = this.compiled(`${route.op.operationId} response ${status}`, () =>
      toJsonSchema(this.resolve(r.content[media].schema) || {}),
    );
    if (!validate || validate(body)) return [];
    return OpenApi.errorsText(validate.errors, `response ${status}`);
  }
}
