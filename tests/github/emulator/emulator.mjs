// The emulated GitHub: its state and the primitives that add to it, the helpers endpoint
// handlers share, and the state dump for the tests. The rest of its methods live in modules
// by concern and are installed on its prototype below: seed.mjs (seeding), objects.mjs
// (GitHub's objects), pulls.mjs (what writes do to pull requests).

import { KNOWN_BOT_IDS, MAX_COMMENT, HttpError, chars, iso, lc, seedError } from './common.mjs';
import { gitObjectSha, writeTree } from './git.mjs';
import { GitHubObjects } from './objects.mjs';
import { PullRequestState } from './pulls.mjs';
import { Seeding } from './seed.mjs';

export class Emulator {
  constructor(api) {
    this.api = api;
    this.base = 'http://127.0.0.1';
    this.started = Math.floor(Date.now() / 1000);
    this.reset();
  }

  reset() {
    this.tokens = new Map();
    this.users = new Map(); // lc(login) -> {login, id, type}
    this.repos = new Map(); // lc(full_name) -> repo record
    this.permissions = new Map(); // lc(full) -> Map lc(login) -> role
    this.refs = new Map(); // lc(full) -> Map 'refs/heads/x' -> sha
    this.commits = new Map(); // sha -> commit record
    this.trees = new Map(); // sha -> {sha, flat, repo, created, base_tree, sent}
    this.blobs = new Map(); // sha -> Buffer
    this.issues = new Map(); // `${lc(full)}#${n}` -> issue record (a pull request is an issue too)
    this.pulls = new Map(); // same key -> pull record
    this.issueComments = new Map();
    this.reviewComments = new Map();
    this.reviews = new Map();
    this.reactions = [];
    this.requests = [];
    this.violations = [];
    this.emulatorErrors = [];
    this.notes = [];
    this.faults = [];
    this.rateUsed = 0;
    this.nextUserId = 100001;
    this.nextObjectId = 2000000001;
  }

  newId() {
    return this.nextObjectId++;
  }

  // GitHub's timestamps have one-second resolution: objects created together share one.
  now() {
    return iso(Date.now());
  }

  note(message, extra = {}) {
    this.notes.push({ message, ...extra });
  }

  // ---------------------------------------------------------------------------------------
  // Users, repositories, refs and git objects (seeding and writes add them)

  addUser(login, type, id) {
    if (typeof login !== 'string' || !login) seedError('a user login must be a non-empty string');
    const existing = this.users.get(lc(login));
    if (existing) {
      if (type) existing.type = type;
      if (id) existing.id = id;
      return existing;
    }
    const u = {
      login,
      id: id || KNOWN_BOT_IDS[login] || this.nextUserId++,
      type: type || (login.endsWith('[bot]') ? 'Bot' : 'User'),
    };
    this.users.set(lc(login), u);
    return u;
  }

  addRepo(full, opts, at) {
    const [owner, name] = full.split('/');
    const key = lc(full);
    if (this.repos.has(key)) return this.repos.get(key);
    if (!this.users.has(lc(owner))) this.addUser(owner, opts.ownerType || 'Organization');
    const repo = {
      key,
      id: opts.id || this.newId(),
      owner: this.users.get(lc(owner)).login,
      name,
      full_name: `${this.users.get(lc(owner)).login}/${name}`,
      default_branch: opts.default_branch || 'main',
      private: !!opts.private,
      fork: !!opts.fork,
      description: opts.description ?? null,
      seeded: !!opts.seeded,
      // GitHub's "Allow GitHub Actions to create and approve pull requests" setting.
      actions_can_create_and_approve_prs: opts.actions_can_create_and_approve_prs !== false,
      created_at: at,
    };
    this.repos.set(key, repo);
    this.refMap(key);
    return repo;
  }

  repoOrCreate(full, at, opts = {}) {
    if (typeof full !== 'string' || !full.includes('/')) seedError(`repository "${full}" must be "owner/name"`);
    return this.repos.get(lc(full)) || this.addRepo(full, { ownerType: 'User', ...opts }, at);
  }

  refMap(key) {
    if (!this.refs.has(key)) this.refs.set(key, new Map());
    return this.refs.get(key);
  }

  putBlob(buf) {
    const sha = gitObjectSha('blob', buf);
    if (!this.blobs.has(sha)) this.blobs.set(sha, buf);
    return sha;
  }

  putTree(flat, meta) {
    let rootSha;
    rootSha = writeTree(flat, (sha, sub) => {
      if (!this.trees.has(sha)) this.trees.set(sha, { sha, flat: new Map(sub), repo: meta.repo, created: false });
    });
    const t = this.trees.get(rootSha);
    if (meta.created && !t.created) Object.assign(t, meta);
    return rootSha;
  }

  // ---------------------------------------------------------------------------------------
  // Helpers for handlers

  repoOf(ctx) {
    const repo = this.repos.get(lc(`${ctx.params.owner}/${ctx.params.repo}`));
    if (!repo) throw this.notFound(ctx);
    if (repo.private && !this.tokenCanSee(ctx, repo)) throw this.notFound(ctx);
    return repo;
  }

  tokenCanSee(ctx, repo) {
    return !ctx.token.repos || ctx.token.repos.includes(repo.key);
  }

  notFound(ctx) {
    return new HttpError(404, { message: 'Not Found', documentation_url: ctx.docUrl });
  }

  failed(ctx, errors, message = 'Validation Failed') {
    return new HttpError(422, { message, errors, documentation_url: ctx.docUrl });
  }

  unprocessable(ctx, messages) {
    return new HttpError(422, { message: 'Unprocessable Entity', errors: messages, documentation_url: ctx.docUrl });
  }

  plain422(ctx, message) {
    return new HttpError(422, { message, documentation_url: ctx.docUrl });
  }

  issueOf(ctx, repo, number) {
    const issue = this.issues.get(`${repo.key}#${number}`);
    if (!issue) throw this.notFound(ctx);
    return issue;
  }

  pullOf(ctx, repo, number) {
    const pr = this.pulls.get(`${repo.key}#${number}`);
    if (!pr) throw this.notFound(ctx);
    return pr;
  }

  paginate(ctx, items, cap = Infinity) {
    const all = items.slice(0, cap);
    const perPage = Math.min(100, Math.max(1, ctx.query.per_page ?? 30));
    const page = Math.max(1, ctx.query.page ?? 1);
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const slice = all.slice((page - 1) * perPage, page * perPage);
    const headers = {};
    if (last > 1) {
      const link = (n) => {
        const u = new URL(ctx.url.pathname, this.base);
        for (const [k, v] of ctx.url.searchParams) if (k !== 'page') u.searchParams.append(k, v);
        u.searchParams.set('page', String(n));
        return u.toString();
      };
      const parts = [];
      if (page > 1) parts.push(`<${link(Math.min(page - 1, last))}>; rel="prev"`);
      if (page < last) parts.push(`<${link(page + 1)}>; rel="next"`, `<${link(last)}>; rel="last"`);
      if (page > 1) parts.push(`<${link(1)}>; rel="first"`);
      if (parts.length) headers.link = parts.join(', ');
    }
    return { slice, headers };
  }

  checkCommentBody(ctx, body, resource) {
    if (typeof body !== 'string' || body.trim() === '') {
      throw this.failed(ctx, [{ resource, code: 'missing_field', field: 'body' }]);
    }
    if (chars(body) > MAX_COMMENT) {
      throw this.failed(ctx, [{ resource, code: 'custom', field: 'body', message: `body is too long (maximum is ${MAX_COMMENT} characters)` }]);
    }
  }

  touch(issue, at) {
    issue.updated_at = at;
  }

  // ---------------------------------------------------------------------------------------
  // State dump for the tests

  state() {
    const sortById = (m) => [...m.values()].sort((a, b) => a.id - b.id);
    const repoName = (key) => this.repos.get(key)?.full_name || key;
    return {
      issue_comments: sortById(this.issueComments).map((c) => ({ ...this.issueCommentObj(c), repo: repoName(c.repo), issue_number: c.number })),
      review_comments: sortById(this.reviewComments).map((c) => ({
        ...this.reviewCommentObj(c),
        repo: repoName(c.repo),
        pull_number: c.number,
        review_state: this.reviews.get(c.review_id)?.state,
      })),
      reviews: sortById(this.reviews).map((r) => ({ ...this.reviewObj(r), repo: repoName(r.repo), pull_number: r.number, comment_ids: [...r.comment_ids] })),
      reactions: this.reactions.map((r) => ({ ...this.reactionObj(r), comment_id: r.comment_id, subject: 'issue_comment', repo: repoName(r.repo) })),
      refs: Object.fromEntries([...this.refs].map(([k, m]) => [repoName(k), Object.fromEntries([...m].sort())])),
      commits: [...this.commits.values()].map((c) => ({
        sha: c.sha,
        repo: c.repo ? repoName(c.repo) : null,
        created: c.created,
        message: c.message,
        tree: c.tree,
        parents: c.parents,
        author: c.author,
        committer: c.committer,
      })),
      trees: [...this.trees.values()]
        .filter((t) => t.created)
        .map((t) => ({
          sha: t.sha,
          repo: t.repo ? repoName(t.repo) : null,
          base_tree: t.base_tree ?? null,
          sent: t.sent,
          files: Object.fromEntries(
            [...t.flat].sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, e]) => [
              p,
              { mode: e.mode, type: e.type, sha: e.sha, content: this.blobs.has(e.sha) ? this.blobs.get(e.sha).toString('utf8') : null },
            ]),
          ),
        })),
      pulls: [...this.pulls.values()].map((pr) => ({
        ...this.pullObj(pr),
        repo: repoName(pr.base.repo),
        created_by_emulator_api: pr.created,
        files: pr.files.map((f) => this.diffEntryObj(pr, f)),
      })),
      requests: this.requests,
      violations: this.violations,
      emulator_errors: this.emulatorErrors,
      notes: this.notes,
      faults: this.faults.map(({ regex, ...f }) => f),
    };
  }
}

// Every method sees the whole emulator as `this`, wherever it is written.
for (const part of [Seeding, GitHubObjects, PullRequestState]) {
  for (const name of Object.getOwnPropertyNames(part.prototype)) {
    if (name !== 'constructor') Object.defineProperty(Emulator.prototype, name, Object.getOwnPropertyDescriptor(part.prototype, name));
  }
}
