#!/usr/bin/env node
// Test-only emulator of the GitHub REST API (see README.md beside this file).
//
//   node server.mjs [--port N] [--no-stdin-exit]
//
// Prints `listening http://127.0.0.1:PORT` on stdout once it accepts connections; everything
// else goes to stderr. Exits when stdin closes (unless --no-stdin-exit) or on SIGTERM/SIGINT.

import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { OpenApi } from './openapi.mjs';
import { HttpError } from './common.mjs';
import { Emulator } from './emulator.mjs';
import { handlers } from './handlers.mjs';
import { webhookEvent } from './events.mjs';

const t0 = process.hrtime.bigint();
const args = process.argv.slice(2);
let port = 0;
let stdinExit = true;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--port') port = Number(args[++i]);
  else if (args[i].startsWith('--port=')) port = Number(args[i].slice(7));
  else if (args[i] === '--no-stdin-exit') stdinExit = false;
  else {
    console.error(`usage: node server.mjs [--port N] [--no-stdin-exit]`);
    process.exit(2);
  }
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`bad --port ${port}`);
  process.exit(2);
}

const api = new OpenApi();
const emu = new Emulator(api);
const WRITE = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const DOCS = 'https://docs.github.com/rest';

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function send(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function rateHeaders() {
  const remaining = Math.max(0, 5000 - emu.rateUsed);
  return {
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(emu.started + 3600),
    'x-ratelimit-used': String(emu.rateUsed),
    'x-ratelimit-resource': 'core',
  };
}

function requestId() {
  const h = randomBytes(10).toString('hex').toUpperCase();
  return `${h.slice(0, 4)}:${h.slice(4, 8)}:${h.slice(8, 14)}:${h.slice(14, 20)}`;
}

function takeFault(method, path) {
  for (const f of emu.faults) {
    if (f.remaining === 0) continue;
    if (f.method !== method || !f.regex.test(path)) continue;
    if (f.remaining !== null) f.remaining--;
    f.used++;
    return f;
  }
  return null;
}

function parseToken(header) {
  const m = /^(?:bearer|token)\s+(\S+)\s*$/i.exec(header || '');
  return m ? m[1] : null;
}

// ---------------------------------------------------------------------------------------
// The emulated API

// The request as the tests see it in the state's `requests`.
function recordRequest(method, path, url, raw) {
  const record = {
    id: emu.requests.length + 1,
    method,
    path,
    query: Object.fromEntries(url.searchParams),
    operation: null,
    user: null,
    status: null,
    violations: [],
    body: null,
  };
  if (raw.length) {
    try {
      record.body = JSON.parse(raw.toString('utf8'));
    } catch {
      record.body = raw.toString('utf8');
    }
  }
  emu.requests.push(record);
  return record;
}

// A write the token may not make: a read-only token, a repository outside the token's list,
// or one the seed did not name (a fork, which a workflow's token cannot write to).
function writeForbidden(method, pathParams, token) {
  if (!WRITE.has(method)) return false;
  const repoKey = pathParams.owner && pathParams.repo ? `${pathParams.owner}/${pathParams.repo}`.toLowerCase() : null;
  const outside = token.repos && repoKey && !token.repos.includes(repoKey);
  const notSeeded = !token.repos && repoKey && emu.repos.has(repoKey) && !emu.repos.get(repoKey).seeded;
  return !token.can_write || outside || notSeeded;
}

// The handler's answer; an exception other than an HttpError is a bug in the emulator.
function callHandler(handler, ctx, record) {
  const { id, method, path } = record;
  try {
    return handler(emu, ctx);
  } catch (err) {
    if (err instanceof HttpError) return { status: err.status, body: err.body, headers: err.headers };
    emu.emulatorErrors.push({ kind: 'exception', message: String(err?.stack || err), request: { id, method, path } });
    console.error(err);
    return { status: 500, body: { message: 'emulator: internal error', documentation_url: ctx.docUrl } };
  }
}

// An answer GitHub's description does not allow is a bug in the emulator: recorded, not sent differently.
function checkAnswer(route, result, record) {
  const { id, method, path } = record;
  if (result.status === 501) {
    emu.emulatorErrors.push({ kind: 'not_emulated', message: result.body.message, request: { id, method, path } });
  }
  for (const message of api.validateResponse(route, result.status, result.body)) {
    emu.emulatorErrors.push({ kind: 'response_schema', message, operation: route.op.operationId, request: { id, method, path } });
    console.error(`emulator: ${route.op.operationId}: ${message}`);
  }
}

async function handleApi(req, res, url, raw) {
  const method = req.method;
  const path = url.pathname;
  emu.rateUsed++;
  const headers = { ...rateHeaders(), 'x-github-request-id': requestId(), 'x-github-api-version-selected': '2022-11-28' };
  const record = recordRequest(method, path, url, raw);
  const violate = (msgs) => {
    for (const message of msgs) {
      record.violations.push(message);
      emu.violations.push({ message, request: { id: record.id, method, path, query: record.query, operation: record.operation } });
    }
  };
  const finish = (status, body, extra = {}) => {
    record.status = status;
    send(res, status, status === 204 ? undefined : body, { ...headers, ...extra });
  };

  const match = api.match(method, path);
  if (!match) {
    violate([`no such operation: ${method} ${path}`]);
    return finish(404, { message: 'Not Found', documentation_url: DOCS });
  }
  const { route } = match;
  record.operation = route.op.operationId;
  const docUrl = route.op.externalDocs?.url || DOCS;
  const lower = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const v = api.validateRequest(route, match.pathParams, url.searchParams, lower, raw);
  violate(v.violations);

  const fault = takeFault(method, path);
  if (fault) {
    record.fault = fault.index;
    Object.assign(headers, fault.headers);
    if (fault.delay_ms) await sleep(fault.delay_ms);
    if (fault.status) return finish(fault.status, fault.body ?? { message: `emulated fault ${fault.status}`, documentation_url: docUrl });
  }
  if (v.violations.length) return finish(422, { message: 'Invalid request', errors: v.violations, documentation_url: docUrl });

  const tokenName = parseToken(lower.authorization);
  const token = tokenName && emu.tokens.get(tokenName);
  if (!token) return finish(401, { message: 'Bad credentials', documentation_url: DOCS });
  record.user = token.user;
  if (writeForbidden(method, match.pathParams, token)) {
    return finish(403, { message: 'Resource not accessible by integration', documentation_url: docUrl });
  }

  const handler = handlers[route.op.operationId];
  if (!handler) {
    const message = `not emulated: ${route.op.operationId} (${method} ${route.template})`;
    emu.emulatorErrors.push({ kind: 'not_emulated', message, request: { id: record.id, method, path } });
    console.error(`emulator: ${message}`);
    return finish(501, { message: `emulator: ${route.op.operationId} is not emulated`, documentation_url: docUrl });
  }
  const ctx = { params: v.params, query: v.query, body: v.body, user: token.user, token, url, docUrl };
  const result = callHandler(handler, ctx, record);
  checkAnswer(route, result, record);
  return finish(result.status, result.body, result.headers);
}

// ---------------------------------------------------------------------------------------
// Control API

function addFaults(list) {
  if (!Array.isArray(list)) list = [list];
  for (const f of list) {
    if (!f || typeof f.method !== 'string' || typeof f.path !== 'string') throw new HttpError(400, { error: 'each fault needs "method" and "path" (a regex)' });
    let regex;
    try {
      regex = new RegExp(f.path);
    } catch (e) {
      throw new HttpError(400, { error: `fault path is not a regex: ${e.message}` });
    }
    if (f.status === undefined && f.delay_ms === undefined && f.headers === undefined) throw new HttpError(400, { error: 'a fault needs "status", "delay_ms" or "headers"' });
    const times = f.times === undefined ? 1 : f.times;
    if (times !== null && !(Number.isInteger(times) && times > 0)) throw new HttpError(400, { error: '"times" must be a positive integer (or null: always)' });
    emu.faults.push({
      index: emu.faults.length,
      method: f.method.toUpperCase(),
      path: f.path,
      regex,
      status: f.status,
      body: f.body,
      headers: Object.fromEntries(Object.entries(f.headers || {}).map(([k, v]) => [k.toLowerCase(), String(v)])),
      delay_ms: f.delay_ms,
      times,
      remaining: times,
      used: 0,
    });
  }
}

async function handleControl(req, res, url, raw) {
  let body;
  if (raw.length) {
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      return send(res, 400, { error: `invalid JSON: ${e.message}` });
    }
  }
  const route = `${req.method} ${url.pathname}`;
  try {
    switch (route) {
      case 'POST /_emulator/seed':
        emu.seed(body);
        return send(res, 200, { ok: true });
      case 'POST /_emulator/faults':
        addFaults(body);
        return send(res, 200, { ok: true, faults: emu.faults.length });
      case 'DELETE /_emulator/faults':
        emu.faults = [];
        return send(res, 200, { ok: true });
      case 'GET /_emulator/state':
        return send(res, 200, emu.state());
      case 'GET /_emulator/event':
        return send(res, 200, webhookEvent(emu, Object.fromEntries(url.searchParams)));
      default:
        return send(res, 404, { error: `no control endpoint ${route}` });
    }
  } catch (err) {
    if (err instanceof HttpError) return send(res, err.status, err.body);
    console.error(err);
    return send(res, 500, { error: String(err?.stack || err) });
  }
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, emu.base);
    const raw = await readBody(req);
    if (url.pathname.startsWith('/_emulator/')) await handleControl(req, res, url, raw);
    else await handleApi(req, res, url, raw);
  } catch (err) {
    console.error(err);
    emu.emulatorErrors.push({ kind: 'exception', message: String(err?.stack || err) });
    if (!res.headersSent) send(res, 500, { message: 'emulator: internal error' });
  }
});
server.keepAliveTimeout = 30_000;

function shutdown() {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
if (stdinExit) {
  process.stdin.on('end', shutdown);
  process.stdin.on('close', shutdown);
  process.stdin.on('error', shutdown);
  process.stdin.resume();
}

server.listen(port, '127.0.0.1', () => {
  const p = server.address().port;
  emu.base = `http://127.0.0.1:${p}`;
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.error(`emulator: ${api.operations.size} operations from the api.github.com description ${api.spec.info?.version ?? ''}, loaded in ${api.loadMs.toFixed(0)} ms; ready in ${ms.toFixed(0)} ms`);
  process.stdout.write(`listening ${emu.base}\n`);
});
