#!/usr/bin/env node
// Self-test of the GitHub API emulator: starts server.mjs, seeds it, drives every emulated
// endpoint with fetch (correct requests and a few deliberately wrong ones) and checks the
// answers and the recorded state. Exits 1 on any failure.
//
//   node tests/github/emulator/selftest.mjs

import { spawn, execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let passed = 0;
const failures = [];

function check(name, cond, detail) {
  if (cond) passed++;
  else {
    failures.push(name);
    console.error(`FAIL ${name}${detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail).slice(0, 1500)}`}`);
  }
}

// ---------------------------------------------------------------------------------------
// Start the server

const t0 = performance.now();
const child = spawn(process.execPath, [join(here, 'server.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout });
const base = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('server did not start within 10 s')), 10_000);
  lines.once('line', (line) => {
    clearTimeout(timer);
    const m = /^listening (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
    if (m) resolve(m[1]);
    else reject(new Error(`unexpected first line: ${line}`));
  });
  child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});
const startupMs = performance.now() - t0;
const extraStdout = [];
lines.on('line', (l) => extraStdout.push(l));
console.error(`server started in ${startupMs.toFixed(0)} ms at ${base}`);
check('startup under 5 s', startupMs < 5000, `${startupMs} ms`);

const UA = 'distribute-selftest/1.0';

async function gh(method, path, { token = 'tok-write', body, ua = true, auth = true, raw } = {}) {
  const headers = { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
  if (ua) headers['user-agent'] = UA;
  if (auth) headers.authorization = `Bearer ${token}`;
  let payload;
  if (raw !== undefined) payload = raw;
  else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const url = path.startsWith('http') ? path : base + path;
  // fetch adds a User-Agent of its own and refuses a body on GET: send those by hand.
  if (!ua || (payload !== undefined && method === 'GET')) return sendRaw(method, url, headers, payload);
  const res = await fetch(url, { method, headers, body: payload });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json };
}

function sendRaw(method, url, headers, payload) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: payload === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(payload) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = text;
        }
        resolve({ status: res.statusCode, headers: new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)])), json });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function control(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const state = async () => (await control('GET', '/_emulator/state')).json;

// ---------------------------------------------------------------------------------------
// Seed

const R = '/repos/octo-org/ml-models';
const hex = (c) => c.repeat(40);
const MAIN = hex('a');
const FEATURE = hex('b');
const MANY = hex('c');
const FORK_HEAD = hex('d');

const OLD_TRAIN = [
  'import tensorflow as tf',
  'model = build()',
  'model.fit()',
  ...Array.from({ length: 16 }, (_, i) => `# filler ${i + 4}`),
  'a',
  'b',
  'c',
  'd',
  '',
].join('\n');
const TRAIN_PATCH = [
  '@@ -1,3 +1,5 @@',
  ' import tensorflow as tf',
  '-model = build()',
  '+import horovod.tensorflow as hvd',
  '+hvd.init()',
  '+model = build()',
  ' model.fit()',
  '@@ -20,4 +22,4 @@ def main():',
  ' a',
  '-b',
  '+B',
  ' c',
  ' d',
].join('\n');

const seed = {
  tokens: {
    'tok-write': { user: 'github-actions[bot]', can_write: true },
    'tok-read': { user: 'github-actions[bot]', can_write: false },
  },
  users: { alice: { type: 'User' }, bob: { type: 'User' }, eve: { type: 'User' } },
  repos: [{ full_name: 'octo-org/ml-models', default_branch: 'main', private: false }],
  permissions: { 'octo-org/ml-models': { alice: 'admin', carol: 'maintain', dave: 'write', bob: 'read', tina: 'triage' } },
  commits: {
    [MAIN]: { files: { 'pkg/train.py': OLD_TRAIN, 'README.md': '# ml-models\n' } },
    [FEATURE]: { parents: [MAIN], files: { 'pkg/train.py': OLD_TRAIN.replace('b\n', 'B\n'), 'README.md': '# ml-models\n' } },
  },
  branches: { 'octo-org/ml-models': { main: MAIN, feature: FEATURE, many: MANY } },
  pulls: [
    {
      repo: 'octo-org/ml-models',
      number: 7,
      title: 'Train on one GPU',
      body: 'b',
      user: 'alice',
      state: 'open',
      head: { repo: 'octo-org/ml-models', ref: 'feature', sha: FEATURE },
      base: { repo: 'octo-org/ml-models', ref: 'main', sha: MAIN },
      files: [
        { filename: 'pkg/train.py', status: 'modified', additions: 4, deletions: 2, patch: TRAIN_PATCH },
        { filename: 'data/big.csv', status: 'modified', additions: 40000, deletions: 1 },
      ],
    },
    {
      repo: 'octo-org/ml-models',
      number: 9,
      title: 'From a fork',
      body: null,
      user: 'someone',
      head: { repo: 'someone/ml-models', ref: 'patch-1', sha: FORK_HEAD },
      base: { repo: 'octo-org/ml-models', ref: 'main', sha: MAIN },
      files: [{ filename: 'pkg/train.py', status: 'modified', additions: 1, deletions: 0, patch: '@@ -1 +1,2 @@\n import tensorflow as tf\n+import os' }],
    },
    {
      repo: 'octo-org/ml-models',
      number: 10,
      title: 'Many files',
      body: '',
      user: 'bob',
      head: { repo: 'octo-org/ml-models', ref: 'many', sha: MANY },
      base: { repo: 'octo-org/ml-models', ref: 'main', sha: MAIN },
      files: Array.from({ length: 350 }, (_, i) => ({ filename: `gen/f${String(i).padStart(3, '0')}.py`, status: 'added', additions: 1, deletions: 0, patch: '@@ -0,0 +1 @@\n+x = 1' })),
    },
  ],
  issues: [{ repo: 'octo-org/ml-models', number: 8, title: 'not a PR', user: 'alice' }],
  issue_comments: [{ repo: 'octo-org/ml-models', issue_number: 7, id: 1001, user: 'alice', body: '/distribute' }],
};

{
  const r = await control('POST', '/_emulator/seed', seed);
  check('seed accepted', r.status === 200, r.json);
}

// ---------------------------------------------------------------------------------------
// 1. pull request and issue

{
  const r = await gh('GET', `${R}/pulls/7`);
  check('GET pull 200', r.status === 200, r.json);
  check('pull fields', r.json.number === 7 && r.json.changed_files === 2 && r.json.head.sha === FEATURE && r.json.base.ref === 'main' && r.json.user.login === 'alice' && r.json.state === 'open', r.json);
  check('pull head repo', r.json.head.repo.full_name === 'octo-org/ml-models' && r.json.head.repo.fork === false && r.json.head.repo.owner.login === 'octo-org', r.json.head);
  check('pull html_url', r.json.html_url === 'https://github.com/octo-org/ml-models/pull/7', r.json.html_url);
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-used', 'x-ratelimit-resource', 'x-github-request-id']) {
    check(`header ${h}`, r.headers.get(h) !== null);
  }
  check('content-type', r.headers.get('content-type') === 'application/json; charset=utf-8', r.headers.get('content-type'));
  check('ratelimit limit 5000', r.headers.get('x-ratelimit-limit') === '5000');

  const f = await gh('GET', `${R}/pulls/9`);
  check('fork pull', f.status === 200 && f.json.head.repo.full_name === 'someone/ml-models' && f.json.head.repo.fork === true && f.json.head.label === 'someone:patch-1', f.json.head);

  const i = await gh('GET', `${R}/issues/7`);
  check('issue of a PR has pull_request', i.status === 200 && i.json.pull_request && i.json.pull_request.url.endsWith('/pulls/7'), i.json);
  const i8 = await gh('GET', `${R}/issues/8`);
  check('plain issue has no pull_request', i8.status === 200 && !('pull_request' in i8.json), i8.json);
  const p8 = await gh('GET', `${R}/pulls/8`);
  check('pulls/8 is 404', p8.status === 404 && p8.json.message === 'Not Found', p8);
  const nr = await gh('GET', '/repos/octo-org/nope/pulls/1');
  check('unknown repo 404', nr.status === 404, nr);
  const rp = await gh('GET', R);
  check('GET repo', rp.status === 200 && rp.json.default_branch === 'main', rp.json);
}

// 2. files, pagination

{
  const one = await gh('GET', `${R}/pulls/7/files`);
  check('files of 7', one.status === 200 && one.json.length === 2 && one.json[0].patch === TRAIN_PATCH && !('patch' in one.json[1]), one.json);
  check('no Link on a single page', one.headers.get('link') === null);

  const d = await gh('GET', `${R}/pulls/10/files`);
  check('default per_page 30', d.json.length === 30, d.json.length);
  let url = `${R}/pulls/10/files?per_page=100`;
  const names = [];
  let pages = 0;
  let firstLink = null;
  while (url && pages < 10) {
    const r = await gh('GET', url);
    check(`files page ${pages + 1}`, r.status === 200, r.json);
    names.push(...r.json.map((x) => x.filename));
    const link = r.headers.get('link');
    if (pages === 0) firstLink = link;
    const next = link && /<([^>]+)>; rel="next"/.exec(link);
    url = next ? next[1] : null;
    pages++;
  }
  check('350 files over 4 pages', names.length === 350 && new Set(names).size === 350 && pages === 4, { n: names.length, pages });
  check('Link has next and last, absolute', /^<http:\/\/127\.0\.0\.1:\d+\/repos\/octo-org\/ml-models\/pulls\/10\/files\?per_page=100&page=2>; rel="next", <[^>]+page=4>; rel="last"$/.test(firstLink || ''), firstLink);
  const big = await gh('GET', `${R}/pulls/10/files?per_page=500`);
  check('per_page capped at 100', big.json.length === 100, big.json.length);
}

// 3. permissions

{
  const want = { alice: ['admin', 'admin'], carol: ['write', 'maintain'], dave: ['write', 'write'], bob: ['read', 'read'], tina: ['read', 'triage'], eve: ['read', 'read'] };
  for (const [u, [perm, role]] of Object.entries(want)) {
    const r = await gh('GET', `${R}/collaborators/${u}/permission`);
    check(`permission of ${u}`, r.status === 200 && r.json.permission === perm && r.json.role_name === role && r.json.user.login === u, r.json);
  }
  const r = await gh('GET', `${R}/collaborators/nobody-at-all/permission`);
  check('permission of unknown user 404', r.status === 404, r);
}

// 4. reactions

{
  const a = await gh('POST', `${R}/issues/comments/1001/reactions`, { body: { content: 'eyes' } });
  check('reaction created 201', a.status === 201 && a.json.content === 'eyes' && a.json.user.login === 'github-actions[bot]' && a.json.user.type === 'Bot', a);
  const b = await gh('POST', `${R}/issues/comments/1001/reactions`, { body: { content: 'eyes' } });
  check('same reaction again 200', b.status === 200 && b.json.id === a.json.id, b);
  const c = await gh('POST', `${R}/issues/comments/999999/reactions`, { body: { content: 'eyes' } });
  check('reaction on unknown comment 404', c.status === 404, c);
  const l = await gh('GET', `${R}/issues/comments/1001/reactions?content=eyes`);
  check('list reactions', l.status === 200 && l.json.length === 1, l.json);
}

// 5. issue comments

let commentId;
{
  const c = await gh('POST', `${R}/issues/7/comments`, { body: { body: 'Rewrite ready' } });
  check('comment 201', c.status === 201 && c.json.body === 'Rewrite ready' && c.json.user.login === 'github-actions[bot]', c);
  check('comment Location', c.headers.get('location') === c.json.url, c.headers.get('location'));
  commentId = c.json.id;
  const l = await gh('GET', `${R}/issues/7/comments`);
  check('list comments', l.status === 200 && l.json.map((x) => x.id).join() === `1001,${commentId}`, l.json.map((x) => x.id));
  const long = await gh('POST', `${R}/issues/7/comments`, { body: { body: 'x'.repeat(65537) } });
  check('too long comment 422', long.status === 422 && long.json.message === 'Validation Failed' && long.json.errors[0].message === 'body is too long (maximum is 65536 characters)' && long.json.errors[0].resource === 'IssueComment' && long.json.errors[0].code === 'custom' && long.json.errors[0].field === 'body', long.json);
  const exact = await gh('POST', `${R}/issues/8/comments`, { body: { body: 'y'.repeat(65536) } });
  check('65536 characters is fine', exact.status === 201, exact.status);
  await new Promise((r) => setTimeout(r, 1100));
  const p = await gh('PATCH', `${R}/issues/comments/${commentId}`, { body: { body: 'Rewrite ready (updated)' } });
  check('update comment', p.status === 200 && p.json.body === 'Rewrite ready (updated)' && p.json.updated_at > p.json.created_at, p.json);
  const pl = await gh('PATCH', `${R}/issues/comments/${commentId}`, { body: { body: 'z'.repeat(70000) } });
  check('update too long 422', pl.status === 422, pl.json);
  const del = await gh('DELETE', `${R}/issues/comments/${exact.json.id}`);
  check('delete comment 204', del.status === 204, del);
  const g = await gh('GET', `${R}/issues/comments/${exact.json.id}`);
  check('deleted comment 404', g.status === 404, g);
}

// 6/7. reviews and review comments

let reviewCommentIds = [];
{
  const s0 = await state();
  const good = await gh('POST', `${R}/pulls/7/reviews`, {
    body: {
      commit_id: FEATURE,
      body: 'distribute found 4 things',
      event: 'COMMENT',
      comments: [
        { path: 'pkg/train.py', line: 3, side: 'RIGHT', body: 'hvd.init() here' },
        { path: 'pkg/train.py', start_line: 2, start_side: 'RIGHT', line: 4, side: 'RIGHT', body: 'multi-line' },
        { path: 'pkg/train.py', line: 2, side: 'LEFT', body: 'on the removed line' },
        { path: 'pkg/train.py', position: 10, body: 'legacy position' },
        { path: 'pkg/train.py', line: 24, body: 'context line, default side' },
      ],
    },
  });
  check('review 200', good.status === 200 && good.json.state === 'COMMENTED' && good.json.commit_id === FEATURE && good.json.user.login === 'github-actions[bot]', good.json);
  const rc = await gh('GET', `${R}/pulls/7/comments`);
  check('5 review comments', rc.status === 200 && rc.json.length === 5, rc.json);
  reviewCommentIds = rc.json.map((c) => c.id);
  const byBody = Object.fromEntries(rc.json.map((c) => [c.body, c]));
  const one = byBody['hvd.init() here'];
  check('comment fields', one && one.pull_request_review_id === good.json.id && one.line === 3 && one.original_line === 3 && one.side === 'RIGHT' && one.start_line === null && one.commit_id === FEATURE && one.position === 4, one);
  check('diff_hunk up to the line', one && one.diff_hunk === '@@ -1,3 +1,5 @@\n import tensorflow as tf\n-model = build()\n+import horovod.tensorflow as hvd\n+hvd.init()', one?.diff_hunk);
  const multi = byBody['multi-line'];
  check('multi-line fields', multi && multi.start_line === 2 && multi.line === 4 && multi.start_side === 'RIGHT', multi);
  const left = byBody['on the removed line'];
  check('LEFT comment', left && left.side === 'LEFT' && left.line === 2, left);
  const legacy = byBody['legacy position'];
  check('position 10 is RIGHT line 23', legacy && legacy.line === 23 && legacy.side === 'RIGHT', legacy);

  const bad = async (name, comments, message, extra = {}) => {
    const r = await gh('POST', `${R}/pulls/7/reviews`, { body: { commit_id: FEATURE, body: 'x', event: 'COMMENT', comments, ...extra } });
    check(name, r.status === 422 && r.json.message === 'Unprocessable Entity' && r.json.errors.includes(message), r.json);
  };
  await bad('comment outside the diff', [{ path: 'pkg/train.py', line: 10, side: 'RIGHT', body: 'no' }], 'Line could not be resolved');
  await bad('comment on a file without patch', [{ path: 'data/big.csv', line: 1, body: 'no' }], 'Line could not be resolved');
  await bad('comment on a file not in the PR', [{ path: 'nope.py', line: 1, body: 'no' }], 'Path could not be resolved');
  await bad('LEFT line outside the old side of every hunk', [{ path: 'pkg/train.py', line: 24, side: 'LEFT', body: 'no' }], 'Line could not be resolved');
  await bad('legacy position on a hunk header', [{ path: 'pkg/train.py', position: 7, body: 'no' }], 'Line could not be resolved');
  await bad('start_line in another hunk', [{ path: 'pkg/train.py', start_line: 2, line: 23, body: 'no' }], 'Pull request review thread start line must be part of the same hunk as the line.');
  await bad('start_line after line', [{ path: 'pkg/train.py', start_line: 4, line: 3, body: 'no' }], 'Pull request review thread start line must precede the end line.');
  await bad('one bad comment rejects all', [{ path: 'pkg/train.py', line: 3, body: 'ok' }, { path: 'pkg/train.py', line: 99, body: 'no' }], 'Line could not be resolved');
  const nb = await gh('POST', `${R}/pulls/7/reviews`, { body: { event: 'COMMENT', comments: [{ path: 'pkg/train.py', line: 3, body: 'x' }] } });
  check('COMMENT without body 422', nb.status === 422, nb.json);
  const s1 = await state();
  check('rejected reviews created nothing', s1.reviews.length === s0.reviews.length + 1 && s1.review_comments.length === s0.review_comments.length + 5, { reviews: s1.reviews.length, rc: s1.review_comments.length });

  const approve = await gh('POST', `${R}/pulls/7/reviews`, { body: { event: 'APPROVE' } });
  check('approve 200', approve.status === 200 && approve.json.state === 'APPROVED', approve.json);
  const pending = await gh('POST', `${R}/pulls/7/reviews`, { body: { body: 'draft', comments: [{ path: 'pkg/train.py', line: 5, body: 'pending one' }] } });
  check('pending review', pending.status === 200 && pending.json.state === 'PENDING' && !('submitted_at' in pending.json), pending.json);
  const pending2 = await gh('POST', `${R}/pulls/7/reviews`, { body: { body: 'draft 2' } });
  check('second pending review 422', pending2.status === 422, pending2.json);

  const lr = await gh('GET', `${R}/pulls/7/reviews`);
  check('list reviews', lr.status === 200 && lr.json.length === 3, lr.json.map((r) => r.state));

  const up = await gh('PATCH', `${R}/pulls/comments/${one.id}`, { body: { body: 'edited' } });
  check('update review comment', up.status === 200 && up.json.body === 'edited', up.json);
  const del = await gh('DELETE', `${R}/pulls/comments/${left.id}`);
  check('delete review comment 204', del.status === 204, del);
  const del2 = await gh('DELETE', `${R}/pulls/comments/${left.id}`);
  check('delete it again 404', del2.status === 404, del2);

  const single = await gh('POST', `${R}/pulls/7/comments`, { body: { body: 'single', commit_id: FEATURE, path: 'pkg/train.py', line: 25, side: 'RIGHT' } });
  check('single review comment 201', single.status === 201 && single.json.line === 25, single.json);
  const reply = await gh('POST', `${R}/pulls/7/comments`, { body: { body: 'reply', commit_id: FEATURE, path: 'pkg/train.py', in_reply_to: single.json.id } });
  check('reply 201', reply.status === 201 && reply.json.in_reply_to_id === single.json.id, reply.json);
}

// 8/9. git data and refs

let treeSha;
let commitSha;
{
  const main = await gh('GET', `${R}/git/ref/heads/main`);
  check('get ref main', main.status === 200 && main.json.ref === 'refs/heads/main' && main.json.object.sha === MAIN && main.json.object.type === 'commit', main.json);
  const mc = await gh('GET', `${R}/git/commits/${MAIN}`);
  check('seeded commit', mc.status === 200 && /^[0-9a-f]{40}$/.test(mc.json.tree.sha), mc.json);
  const baseTree = mc.json.tree.sha;
  const bt = await gh('GET', `${R}/git/trees/${baseTree}?recursive=1`);
  check('seeded tree recursive', bt.status === 200 && bt.json.tree.map((t) => `${t.type}:${t.path}`).join() === 'blob:README.md,tree:pkg,blob:pkg/train.py', bt.json.tree);

  const NEW_TRAIN = OLD_TRAIN.replace('model = build()\n', 'import horovod.tensorflow as hvd\nhvd.init()\nmodel = build()\n');
  const blob = await gh('POST', `${R}/git/blobs`, { body: { content: 'print(1)\n', encoding: 'utf-8' } });
  check('blob 201', blob.status === 201 && /^[0-9a-f]{40}$/.test(blob.json.sha), blob.json);
  const gb = await gh('GET', `${R}/git/blobs/${blob.json.sha}`);
  check('get blob', gb.status === 200 && Buffer.from(gb.json.content, 'base64').toString() === 'print(1)\n', gb.json);

  const treeBody = {
    base_tree: baseTree,
    tree: [
      { path: 'pkg/train.py', mode: '100644', type: 'blob', content: NEW_TRAIN },
      { path: 'pkg/util.py', mode: '100644', type: 'blob', sha: blob.json.sha },
      { path: 'README.md', mode: '100644', type: 'blob', sha: null },
    ],
  };
  const t1 = await gh('POST', `${R}/git/trees`, { body: treeBody });
  check('tree 201', t1.status === 201 && t1.json.truncated === false, t1.json);
  const t2 = await gh('POST', `${R}/git/trees`, { body: treeBody });
  check('same tree, same sha', t2.status === 201 && t2.json.sha === t1.json.sha, [t1.json.sha, t2.json.sha]);
  treeSha = t1.json.sha;
  // The sha is git's: build the same tree with git itself.
  try {
    const dir = mkdtempSync(join(tmpdir(), 'emu-git-'));
    const git = (args, input) => execFileSync('git', args, { cwd: dir, input, env: { ...process.env, GIT_DIR: join(dir, '.git'), GIT_INDEX_FILE: join(dir, 'index') } }).toString().trim();
    git(['init', '-q']);
    const add = (path, content) => git(['update-index', '--add', '--cacheinfo', `100644,${git(['hash-object', '-w', '--stdin'], content)},${path}`]);
    add('pkg/train.py', NEW_TRAIN);
    add('pkg/util.py', 'print(1)\n');
    check('tree sha equals git write-tree', git(['write-tree']) === treeSha, treeSha);
    rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    console.error(`(git not usable here, skipped the git cross-check: ${e.message})`);
  }
  const gt = await gh('GET', `${R}/git/trees/${treeSha}`);
  check('get tree top level', gt.status === 200 && gt.json.tree.length === 1 && gt.json.tree[0].path === 'pkg' && gt.json.tree[0].type === 'tree', gt.json.tree);

  const c = await gh('POST', `${R}/git/commits`, { body: { message: 'distribute: rewrite for Horovod', tree: treeSha, parents: [MAIN] } });
  check('commit 201', c.status === 201 && c.json.tree.sha === treeSha && c.json.parents[0].sha === MAIN && c.json.author.name === 'github-actions[bot]', c.json);
  commitSha = c.json.sha;
  const gc = await gh('GET', `${R}/git/commits/${commitSha}`);
  check('get commit', gc.status === 200 && gc.json.message === 'distribute: rewrite for Horovod', gc.json);

  const ref = 'refs/heads/distribute/pr-7';
  const cr = await gh('POST', `${R}/git/refs`, { body: { ref, sha: commitSha } });
  check('create ref 201', cr.status === 201 && cr.json.ref === ref && cr.json.object.sha === commitSha, cr.json);
  const cr2 = await gh('POST', `${R}/git/refs`, { body: { ref, sha: commitSha } });
  check('create existing ref 422', cr2.status === 422 && cr2.json.message === 'Reference already exists', cr2.json);
  const cr3 = await gh('POST', `${R}/git/refs`, { body: { ref: 'heads/oops', sha: commitSha } });
  check('ref without refs/ 422', cr3.status === 422, cr3.json);
  const g = await gh('GET', `${R}/git/ref/heads/distribute/pr-7`);
  check('get ref with slashes', g.status === 200 && g.json.object.sha === commitSha, g.json);
  const g404 = await gh('GET', `${R}/git/ref/heads/distribute/pr-8`);
  check('get missing ref 404', g404.status === 404, g404.json);

  const nff = await gh('PATCH', `${R}/git/refs/heads/distribute/pr-7`, { body: { sha: FEATURE, force: false } });
  check('non-fast-forward 422', nff.status === 422 && nff.json.message === 'Update is not a fast forward', nff.json);
  const forced = await gh('PATCH', `${R}/git/refs/heads/distribute/pr-7`, { body: { sha: FEATURE, force: true } });
  check('forced update 200', forced.status === 200 && forced.json.object.sha === FEATURE, forced.json);
  const c2 = await gh('POST', `${R}/git/commits`, { body: { message: 'rewrite on top of feature', tree: treeSha, parents: [FEATURE] } });
  const ff = await gh('PATCH', `${R}/git/refs/heads/distribute/pr-7`, { body: { sha: c2.json.sha } });
  check('fast-forward 200', ff.status === 200 && ff.json.object.sha === c2.json.sha, ff.json);
  commitSha = c2.json.sha;
}

// 10. pull requests

{
  const l = await gh('GET', `${R}/pulls?state=open&head=octo-org:feature&base=main&per_page=10&page=1`);
  check('list pulls by head', l.status === 200 && l.json.length === 1 && l.json[0].number === 7, l.json.map((p) => p.number));
  const all = await gh('GET', `${R}/pulls?state=all`);
  check('list all pulls, newest first', all.json.map((p) => p.number).join() === '10,9,7', all.json.map((p) => p.number));

  const create = { title: 'distribute: Horovod rewrite of #7', head: 'distribute/pr-7', base: 'main', body: 'Generated', maintainer_can_modify: false, draft: false };
  const p = await gh('POST', `${R}/pulls`, { body: create });
  check('create pull 201', p.status === 201 && p.json.number === 11 && p.json.head.ref === 'distribute/pr-7' && p.json.head.sha === commitSha && p.json.user.login === 'github-actions[bot]', p.json);
  const files = await gh('GET', `${R}/pulls/11/files`);
  const st = Object.fromEntries((files.json || []).map((f) => [f.filename, f.status]));
  check('files of the created pull', files.status === 200 && st['pkg/train.py'] === 'modified' && st['pkg/util.py'] === 'added' && st['README.md'] === 'removed', files.json);
  const trainPatch = files.json.find((f) => f.filename === 'pkg/train.py')?.patch || '';
  check('computed patch', trainPatch.startsWith('@@ -1,4 +1,6 @@\n import tensorflow as tf\n+import horovod.tensorflow as hvd\n+hvd.init()\n model = build()'), trainPatch);
  const dup = await gh('POST', `${R}/pulls`, { body: create });
  check('duplicate pull 422', dup.status === 422 && dup.json.errors?.[0]?.message === 'A pull request already exists for octo-org:distribute/pr-7.', dup.json);
  const noHead = await gh('POST', `${R}/pulls`, { body: { ...create, head: 'does-not-exist' } });
  check('missing head 422', noHead.status === 422 && noHead.json.errors?.[0]?.field === 'head', noHead.json);
  const noBase = await gh('POST', `${R}/pulls`, { body: { ...create, base: 'does-not-exist' } });
  check('missing base 422', noBase.status === 422 && noBase.json.errors?.[0]?.field === 'base', noBase.json);
  const byHead = await gh('GET', `${R}/pulls?head=octo-org:distribute/pr-7`);
  check('find created pull by head', byHead.json.length === 1 && byHead.json[0].number === 11, byHead.json.map((x) => x.number));
  const noOwner = await gh('GET', `${R}/pulls?head=distribute/pr-7`);
  check('head without owner is ignored, as on GitHub', noOwner.json.length === 4, noOwner.json.map((x) => x.number));

  const upd = await gh('PATCH', `${R}/pulls/11`, { body: { title: 'distribute: updated', body: 'new body' } });
  check('update pull', upd.status === 200 && upd.json.title === 'distribute: updated' && upd.json.body === 'new body', upd.json);
  const close = await gh('PATCH', `${R}/pulls/11`, { body: { state: 'closed' } });
  check('close pull', close.status === 200 && close.json.state === 'closed' && close.json.closed_at !== null, close.json);
  const reopen = await gh('PATCH', `${R}/pulls/11`, { body: { state: 'open' } });
  check('reopen pull', reopen.status === 200 && reopen.json.state === 'open', reopen.json);

  const delRef = await gh('DELETE', `${R}/git/refs/heads/distribute/pr-7`);
  check('delete ref 204', delRef.status === 204, delRef);
  const gone = await gh('GET', `${R}/git/ref/heads/distribute/pr-7`);
  check('deleted ref 404', gone.status === 404, gone.json);
  const closed = await gh('GET', `${R}/pulls/11`);
  check('deleting the head branch closes the pull', closed.json.state === 'closed', closed.json.state);
  const delMissing = await gh('DELETE', `${R}/git/refs/heads/distribute/pr-7`);
  check('delete missing ref 422', delMissing.status === 422, delMissing.json);
}

// ---------------------------------------------------------------------------------------
// Deliberately wrong requests

const expectViolations = [];
{
  const s0 = await state();
  const q = await gh('GET', `${R}/pulls/7/files?per_page=10&pge=2`);
  check('unknown query parameter 422', q.status === 422 && q.json.message === 'Invalid request' && q.json.errors.some((m) => m.includes('"pge"')), q.json);
  expectViolations.push('pge');
  const t = await gh('GET', `${R}/pulls?state=merged`);
  check('bad enum query value 422', t.status === 422, t.json);
  expectViolations.push('state');
  const b = await gh('POST', `${R}/pulls/7/reviews`, { body: { body: 'x', event: 'SUBMIT', comments: [{ path: 'pkg/train.py', line: '3', body: 'x' }] } });
  check('body schema error 422', b.status === 422 && b.json.errors.length >= 2, b.json);
  expectViolations.push('body schema');
  const u = await gh('POST', `${R}/pulls/7/reviews`, { body: { body: 'x', event: 'COMMENT', comments: [{ path: 'pkg/train.py', line: 3, body: 'x', sid: 'RIGHT' }] } });
  check('unknown body field 422', u.status === 422 && u.json.errors.some((m) => m.includes('"sid"')), u.json);
  expectViolations.push('sid');
  const ua = await gh('GET', `${R}/pulls/7`, { ua: false });
  check('missing User-Agent 422', ua.status === 422 && ua.json.errors.some((m) => m.includes('User-Agent')), ua.json);
  expectViolations.push('ua');
  const na = await gh('GET', `${R}/pulls/7`, { auth: false });
  check('missing Authorization 422', na.status === 422, na.json);
  expectViolations.push('auth');
  const gb = await gh('GET', `${R}/pulls/7`, { raw: '{}' });
  check('body on GET 422', gb.status === 422, gb.json);
  expectViolations.push('get body');
  const ij = await gh('POST', `${R}/issues/7/comments`, { raw: '{"body": ' });
  check('invalid JSON 422', ij.status === 422, ij.json);
  expectViolations.push('invalid json');
  const nb = await gh('POST', `${R}/issues/7/comments`);
  check('missing required body 422', nb.status === 422, nb.json);
  expectViolations.push('missing body');
  const pp = await gh('GET', `${R}/pulls/seven`);
  check('path parameter type 422', pp.status === 422, pp.json);
  expectViolations.push('path param');
  const no = await gh('GET', '/repos/octo-org/ml-models/frobnicate');
  check('no such operation 404', no.status === 404 && no.json.message === 'Not Found' && no.json.documentation_url, no.json);
  expectViolations.push('no op');
  const s1 = await state();
  check('violating requests changed nothing', s1.reviews.length === s0.reviews.length && s1.issue_comments.length === s0.issue_comments.length);

  const bad = await gh('GET', `${R}/pulls/7`, { token: 'nope' });
  check('bad token 401', bad.status === 401 && bad.json.message === 'Bad credentials', bad.json);
  const ro = await gh('POST', `${R}/issues/7/comments`, { token: 'tok-read', body: { body: 'hi' } });
  check('read-only token write 403', ro.status === 403 && ro.json.message === 'Resource not accessible by integration' && ro.json.documentation_url === 'https://docs.github.com/rest/issues/comments#create-an-issue-comment', ro.json);
  const rr = await gh('GET', `${R}/pulls/7`, { token: 'tok-read' });
  check('read-only token read 200', rr.status === 200);
  const fork = await gh('POST', '/repos/someone/ml-models/git/refs', { body: { ref: 'refs/heads/x', sha: FORK_HEAD } });
  check('write to a fork 403', fork.status === 403, fork.json);
  const ne = await gh('GET', `${R}/branches`);
  check('not emulated 501', ne.status === 501, ne.json);
}

// Fault injection

{
  const now = Math.floor(Date.now() / 1000);
  const f = await control('POST', '/_emulator/faults', [
    { method: 'POST', path: '^/repos/[^/]+/[^/]+/issues/\\d+/comments$', status: 500, times: 1, headers: { 'retry-after': '1' }, body: { message: 'Server Error' } },
    { method: 'GET', path: '^/repos/[^/]+/[^/]+/pulls/9$', status: 403, times: 1, headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now + 2) }, body: { message: 'API rate limit exceeded for installation ID 1.', documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api' } },
    { method: 'GET', path: '^/repos/[^/]+/[^/]+/issues/8$', delay_ms: 400, times: 1 },
  ]);
  check('faults accepted', f.status === 200, f.json);
  const before = (await state()).issue_comments.length;
  const e1 = await gh('POST', `${R}/issues/7/comments`, { body: { body: 'retry me' } });
  check('fault 500 with retry-after', e1.status === 500 && e1.headers.get('retry-after') === '1' && e1.json.message === 'Server Error', e1);
  check('fault did not touch state', (await state()).issue_comments.length === before);
  const e2 = await gh('POST', `${R}/issues/7/comments`, { body: { body: 'retry me' } });
  check('retry succeeds', e2.status === 201, e2.json);
  const rl = await gh('GET', `${R}/pulls/9`);
  check('primary rate limit', rl.status === 403 && rl.headers.get('x-ratelimit-remaining') === '0' && rl.headers.get('x-ratelimit-reset') === String(now + 2), rl.json);
  const rl2 = await gh('GET', `${R}/pulls/9`);
  check('after the rate limit', rl2.status === 200 && rl2.headers.get('x-ratelimit-remaining') !== '0');
  const t = performance.now();
  const d = await gh('GET', `${R}/issues/8`);
  const took = performance.now() - t;
  check('delay fault', d.status === 200 && took >= 390, took);
}

// Webhook event payload built from the seed

{
  const r = await control('GET', '/_emulator/event?name=issue_comment&action=created&repo=octo-org/ml-models&comment_id=1001');
  check('issue_comment event', r.status === 200 && r.json.action === 'created' && r.json.comment.id === 1001 && r.json.issue.number === 7 && r.json.issue.pull_request && r.json.repository.full_name === 'octo-org/ml-models' && r.json.sender.login === 'alice', r.json);
  const p = await control('GET', '/_emulator/event?name=pull_request&action=synchronize&repo=octo-org/ml-models&number=9');
  check('pull_request event', p.status === 200 && p.json.pull_request.head.repo.full_name === 'someone/ml-models' && p.json.after === FORK_HEAD, p.json);
}

// ---------------------------------------------------------------------------------------
// The recorded state

{
  const s = await state();
  const errs = s.emulator_errors.filter((e) => e.kind !== 'not_emulated');
  check('no emulator errors', errs.length === 0, errs);
  const ne = s.emulator_errors.filter((e) => e.kind === 'not_emulated');
  check('one not-emulated note', ne.length === 1 && ne[0].message.includes('repos/list-branches'), ne);
  const violating = new Set(s.violations.map((v) => v.request.id));
  check('violations only from the deliberate requests', violating.size === expectViolations.length, s.violations.map((v) => `${v.request.method} ${v.request.path}: ${v.message}`));
  check('every request logged with a status', s.requests.every((r) => Number.isInteger(r.status) && Array.isArray(r.violations)));
  check('state has reactions on 1001', s.reactions.length === 1 && s.reactions[0].comment_id === 1001 && s.reactions[0].content === 'eyes', s.reactions);
  check('state has the bot tree contents', s.trees.some((t) => t.sha === treeSha && t.files['pkg/util.py']?.content === 'print(1)\n' && t.sent.length === 3), s.trees.map((t) => t.sha));
  check('state has refs', s.refs['octo-org/ml-models']['refs/heads/main'] === MAIN && !('refs/heads/distribute/pr-7' in s.refs['octo-org/ml-models']), s.refs);
  check('state has created commits', s.commits.filter((c) => c.created).length === 2, s.commits.filter((c) => c.created));
  check('state has pulls', s.pulls.length === 4 && s.pulls.find((p) => p.number === 11)?.created_by_emulator_api === true);
  check('head filter without owner noted', s.notes.some((n) => n.message.includes('has no "owner:" prefix')), s.notes);
  check('stdout had only the listening line', extraStdout.length === 0, extraStdout);
}

// GitHub's default for new repositories: Actions may not create or approve pull requests.
{
  const r = await control('POST', '/_emulator/seed', {
    ...seed,
    repos: [{ full_name: 'octo-org/ml-models', default_branch: 'main', actions_can_create_and_approve_prs: false }],
  });
  check('re-seed', r.status === 200, r.json);
  const s = await state();
  check('seed resets the log', s.requests.length === 0 && s.violations.length === 0 && s.faults.length === 0, s.requests.length);
  const p = await gh('POST', `${R}/pulls`, { body: { title: 't', head: 'feature', base: 'main' } });
  check('Actions may not create pulls', p.status === 403 && p.json.message === 'GitHub Actions is not permitted to create or approve pull requests.', p.json);
  const a = await gh('POST', `${R}/pulls/7/reviews`, { body: { event: 'APPROVE' } });
  check('Actions may not approve', a.status === 422 && a.json.errors[0] === 'GitHub Actions is not permitted to approve pull requests.', a.json);
  const c = await gh('POST', `${R}/pulls/7/reviews`, { body: { event: 'COMMENT', body: 'fine' } });
  check('but may comment', c.status === 200, c.json);
  const bad = await control('POST', '/_emulator/seed', { ...seed, issues: [{ repo: 'octo-org/ml-models', number: 7, title: 'clash', user: 'alice' }] });
  check('seed with a clashing number is refused', bad.status === 400 && /seeded twice/.test(bad.json.error), bad.json);
  const after = await state();
  check('a refused seed keeps the state', after.reviews.length === 1 && after.requests.length === 3, { reviews: after.reviews.length, requests: after.requests.length });
  check('no emulator errors after re-seed', after.emulator_errors.length === 0, after.emulator_errors);
}

// stdin closing stops the server
child.stdin.end();
const exited = await Promise.race([new Promise((r) => child.once('exit', () => r(true))), new Promise((r) => setTimeout(() => r(false), 3000))]);
check('server exits when stdin closes', exited);
if (!exited) child.kill('SIGTERM');

console.log(`startup: ${startupMs.toFixed(0)} ms`);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
