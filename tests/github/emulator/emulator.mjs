// The emulated GitHub: state, the objects GitHub returns, and the endpoint handlers.

import {
  EMPTY_TREE,
  commitText,
  diffHunk,
  findLine,
  findPosition,
  gitObjectSha,
  makePatch,
  parsePatch,
  treeLevel,
  writeTree,
} from './git.mjs';

const HTML = 'https://github.com';
const SEED_TIME = Date.parse('2024-01-02T03:04:05Z');
const MAX_COMMENT = 65536;
const MAX_PR_FILES = 3000;
const REACTIONS = ['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'rocket', 'eyes'];
const KNOWN_BOT_IDS = { 'github-actions[bot]': 41898282, 'dependabot[bot]': 49699333 };
const ROLE_PERMISSION = { admin: 'admin', maintain: 'write', write: 'write', triage: 'read', read: 'read', none: 'none' };

export class HttpError extends Error {
  constructor(status, body, headers) {
    super(body?.message || String(status));
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const lc = (s) => String(s).toLowerCase();
const nodeId = (prefix, id) => `${prefix}_${Buffer.from(`emu:${id}`).toString('base64url')}`;
const encPath = (p) => p.split('/').map(encodeURIComponent).join('/');
const isSha = (s) => typeof s === 'string' && /^[0-9a-f]{40}$/.test(s);
const chars = (s) => [...s].length;

function seedError(msg) {
  throw new HttpError(400, { error: `bad seed: ${msg}` });
}

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
  // Seed

  // All or nothing: a bad seed leaves the previous state as it was.
  seed(s) {
    const saved = { ...this };
    try {
      this.seedInto(s);
    } catch (err) {
      for (const k of Object.keys(this)) if (!(k in saved)) delete this[k];
      Object.assign(this, saved);
      throw err;
    }
  }

  seedInto(s) {
    if (!s || typeof s !== 'object' || Array.isArray(s)) seedError('not an object');
    this.reset();
    let t = SEED_TIME;
    const tick = () => iso((t += 60_000));

    for (const [login, u] of Object.entries(s.users || {})) this.addUser(login, u?.type, u?.id);
    for (const [token, info] of Object.entries(s.tokens || {})) {
      if (!info || typeof info.user !== 'string') seedError(`token ${token} needs a "user"`);
      this.addUser(info.user);
      this.tokens.set(token, {
        user: this.users.get(lc(info.user)).login,
        can_write: info.can_write !== false,
        repos: Array.isArray(info.repos) ? info.repos.map(lc) : null,
      });
    }
    for (const r of s.repos || []) {
      if (!r || typeof r.full_name !== 'string' || !r.full_name.includes('/')) seedError('each repo needs "full_name": "owner/name"');
      this.addRepo(r.full_name, { ...r, seeded: true }, tick());
    }
    for (const [full, perms] of Object.entries(s.permissions || {})) {
      const m = new Map();
      for (const [login, role] of Object.entries(perms)) {
        if (!(role in ROLE_PERMISSION)) seedError(`permission ${role} of ${login} on ${full}: use admin|maintain|write|triage|read`);
        this.addUser(login);
        m.set(lc(login), role);
      }
      this.permissions.set(lc(full), m);
    }
    this.seedCommits = s.commits || {};
    for (const [sha, c] of Object.entries(this.seedCommits)) {
      if (!isSha(sha)) seedError(`commit ${sha} is not a 40-hex sha`);
      this.ensureCommit(sha, null, c);
    }
    for (const [full, branches] of Object.entries(s.branches || {})) {
      const repo = this.repoOrCreate(full, tick());
      for (const [name, sha] of Object.entries(branches)) {
        if (!isSha(sha)) seedError(`branch ${full}:${name} sha ${sha} is not 40 lowercase hex`);
        this.ensureCommit(sha, repo.key);
        this.refMap(repo.key).set(`refs/heads/${name}`, sha);
      }
    }
    for (const p of s.pulls || []) this.seedPull(p, tick);
    for (const i of s.issues || []) {
      const repo = this.repoOrCreate(i.repo, tick());
      if (!Number.isInteger(i.number)) seedError('each issue needs a "number"');
      this.addUser(i.user || 'octocat');
      const at = tick();
      if (this.issues.has(`${repo.key}#${i.number}`)) seedError(`${repo.full_name}#${i.number} is seeded twice (pull requests and issues share numbers)`);
      this.issues.set(`${repo.key}#${i.number}`, {
        repo: repo.key,
        number: i.number,
        id: this.newId(),
        title: i.title ?? `Issue ${i.number}`,
        body: i.body ?? null,
        user: this.users.get(lc(i.user || 'octocat')).login,
        state: i.state || 'open',
        locked: !!i.locked,
        created_at: at,
        updated_at: at,
        closed_at: i.state === 'closed' ? at : null,
        is_pull: false,
      });
    }
    for (const c of s.issue_comments || []) {
      const repo = this.repoOrCreate(c.repo, tick());
      if (!this.issues.has(`${repo.key}#${c.issue_number}`)) seedError(`issue_comment ${c.id}: no issue or pull ${c.repo}#${c.issue_number}`);
      this.addUser(c.user);
      const at = c.created_at || tick();
      const id = Number.isInteger(c.id) ? c.id : this.newId();
      this.issueComments.set(id, {
        id,
        repo: repo.key,
        number: c.issue_number,
        user: this.users.get(lc(c.user)).login,
        body: c.body ?? '',
        created_at: at,
        updated_at: c.updated_at || at,
      });
    }
    const maxSeeded = Math.max(0, ...this.issueComments.keys());
    if (maxSeeded >= this.nextObjectId) this.nextObjectId = maxSeeded + 1;
  }

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

  // A commit named in the seed: a root commit (unless the seed's `commits` says otherwise)
  // whose tree holds the seed's `files` for it (empty by default).
  ensureCommit(sha, repoKey, spec) {
    if (this.commits.has(sha)) return this.commits.get(sha);
    spec = spec || this.seedCommits?.[sha] || {};
    const flat = new Map();
    for (const [path, content] of Object.entries(spec.files || {})) {
      const blob = this.putBlob(Buffer.from(String(content)));
      flat.set(path, { mode: '100644', type: 'blob', sha: blob });
    }
    const tree = this.putTree(flat, { repo: repoKey, created: false });
    const date = iso(SEED_TIME);
    const who = { name: 'Seed', email: 'seed@example.com', date };
    const c = {
      sha,
      tree,
      parents: spec.parents || [],
      message: spec.message || 'seeded commit',
      author: who,
      committer: who,
      repo: repoKey,
      created: false,
    };
    this.commits.set(sha, c);
    for (const p of c.parents) if (isSha(p)) this.ensureCommit(p, repoKey);
    return c;
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

  seedPull(p, tick) {
    if (!p || !Number.isInteger(p.number)) seedError('each pull needs a "number"');
    const base = this.repoOrCreate(p.repo, tick());
    const headFull = p.head?.repo || p.repo;
    const head = this.repos.get(lc(headFull)) || this.addRepo(headFull, { ownerType: 'User', fork: lc(headFull) !== base.key, parent: base.key }, tick());
    if (!p.head?.ref || !p.base?.ref) seedError(`pull ${p.number}: head.ref and base.ref are required`);
    const headSha = p.head.sha || this.refMap(head.key).get(`refs/heads/${p.head.ref}`);
    const baseSha = p.base.sha || this.refMap(base.key).get(`refs/heads/${p.base.ref}`);
    if (!isSha(headSha) || !isSha(baseSha)) seedError(`pull ${p.number}: head.sha and base.sha must be 40-hex shas (or name seeded branches)`);
    this.ensureCommit(headSha, head.key);
    this.ensureCommit(baseSha, base.key);
    if (!this.refMap(head.key).has(`refs/heads/${p.head.ref}`)) this.refMap(head.key).set(`refs/heads/${p.head.ref}`, headSha);
    if (!this.refMap(base.key).has(`refs/heads/${p.base.ref}`)) this.refMap(base.key).set(`refs/heads/${p.base.ref}`, baseSha);
    const user = this.addUser(p.user || head.owner).login;
    const at = tick();
    const key = `${base.key}#${p.number}`;
    if (this.issues.has(key)) seedError(`${base.full_name}#${p.number} is seeded twice (pull requests and issues share numbers)`);
    const files = (p.files || []).map((f) => {
      if (!f.filename) seedError(`pull ${p.number}: each file needs a "filename"`);
      const additions = f.additions ?? 0;
      const deletions = f.deletions ?? 0;
      return {
        filename: f.filename,
        status: f.status || 'modified',
        additions,
        deletions,
        changes: f.changes ?? additions + deletions,
        patch: f.patch,
        previous_filename: f.previous_filename,
        sha: f.sha || gitObjectSha('blob', `${f.filename}\n${f.patch ?? ''}`),
      };
    });
    this.issues.set(key, {
      repo: base.key,
      number: p.number,
      id: this.newId(),
      title: p.title ?? `Pull request ${p.number}`,
      body: p.body ?? null,
      user,
      state: p.state || 'open',
      locked: !!p.locked,
      created_at: at,
      updated_at: at,
      closed_at: p.state === 'closed' ? at : null,
      is_pull: true,
    });
    this.pulls.set(key, {
      key,
      id: this.newId(),
      head: { repo: head.key, ref: p.head.ref, sha: headSha },
      base: { repo: base.key, ref: p.base.ref, sha: baseSha },
      files,
      draft: !!p.draft,
      merged: !!p.merged,
      maintainer_can_modify: p.maintainer_can_modify ?? false,
      created: false,
    });
  }

  // ---------------------------------------------------------------------------------------
  // GitHub's objects

  apiRepo(repo) {
    return `${this.base}/repos/${repo.full_name}`;
  }

  userObj(login) {
    const u = this.users.get(lc(login)) || this.addUser(login);
    const api = `${this.base}/users/${encodeURIComponent(u.login)}`;
    const bot = u.type === 'Bot';
    return {
      login: u.login,
      id: u.id,
      node_id: nodeId(bot ? 'BOT' : u.type === 'Organization' ? 'O' : 'U', u.id),
      avatar_url: bot ? `https://avatars.githubusercontent.com/in/${u.id}?v=4` : `https://avatars.githubusercontent.com/u/${u.id}?v=4`,
      gravatar_id: '',
      url: api,
      html_url: bot ? `${HTML}/apps/${encodeURIComponent(u.login.replace(/\[bot\]$/, ''))}` : `${HTML}/${encodeURIComponent(u.login)}`,
      followers_url: `${api}/followers`,
      following_url: `${api}/following{/other_user}`,
      gists_url: `${api}/gists{/gist_id}`,
      starred_url: `${api}/starred{/owner}{/repo}`,
      subscriptions_url: `${api}/subscriptions`,
      organizations_url: `${api}/orgs`,
      repos_url: `${api}/repos`,
      events_url: `${api}/events{/privacy}`,
      received_events_url: `${api}/received_events`,
      type: u.type,
      user_view_type: 'public',
      site_admin: false,
    };
  }

  repoObj(repo, full = false) {
    const api = this.apiRepo(repo);
    const html = `${HTML}/${repo.full_name}`;
    const openIssues = [...this.issues.values()].filter((i) => i.repo === repo.key && i.state === 'open').length;
    const o = {
      id: repo.id,
      node_id: nodeId('R', repo.id),
      name: repo.name,
      full_name: repo.full_name,
      private: repo.private,
      owner: this.userObj(repo.owner),
      html_url: html,
      description: repo.description,
      fork: repo.fork,
      url: api,
      forks_url: `${api}/forks`,
      keys_url: `${api}/keys{/key_id}`,
      collaborators_url: `${api}/collaborators{/collaborator}`,
      teams_url: `${api}/teams`,
      hooks_url: `${api}/hooks`,
      issue_events_url: `${api}/issues/events{/number}`,
      events_url: `${api}/events`,
      assignees_url: `${api}/assignees{/user}`,
      branches_url: `${api}/branches{/branch}`,
      tags_url: `${api}/tags`,
      blobs_url: `${api}/git/blobs{/sha}`,
      git_tags_url: `${api}/git/tags{/sha}`,
      git_refs_url: `${api}/git/refs{/sha}`,
      trees_url: `${api}/git/trees{/sha}`,
      statuses_url: `${api}/statuses/{sha}`,
      languages_url: `${api}/languages`,
      stargazers_url: `${api}/stargazers`,
      contributors_url: `${api}/contributors`,
      subscribers_url: `${api}/subscribers`,
      subscription_url: `${api}/subscription`,
      commits_url: `${api}/commits{/sha}`,
      git_commits_url: `${api}/git/commits{/sha}`,
      comments_url: `${api}/comments{/number}`,
      issue_comment_url: `${api}/issues/comments{/number}`,
      contents_url: `${api}/contents/{+path}`,
      compare_url: `${api}/compare/{base}...{head}`,
      merges_url: `${api}/merges`,
      archive_url: `${api}/{archive_format}{/ref}`,
      downloads_url: `${api}/downloads`,
      issues_url: `${api}/issues{/number}`,
      pulls_url: `${api}/pulls{/number}`,
      milestones_url: `${api}/milestones{/number}`,
      notifications_url: `${api}/notifications{?since,all,participating}`,
      labels_url: `${api}/labels{/name}`,
      releases_url: `${api}/releases{/id}`,
      deployments_url: `${api}/deployments`,
      created_at: repo.created_at,
      updated_at: repo.created_at,
      pushed_at: repo.created_at,
      git_url: `git://github.com/${repo.full_name}.git`,
      ssh_url: `git@github.com:${repo.full_name}.git`,
      clone_url: `${html}.git`,
      svn_url: html,
      homepage: null,
      size: 0,
      stargazers_count: 0,
      watchers_count: 0,
      language: 'Python',
      has_issues: true,
      has_projects: true,
      has_downloads: true,
      has_wiki: true,
      has_pages: false,
      has_discussions: false,
      forks_count: 0,
      mirror_url: null,
      archived: false,
      disabled: false,
      open_issues_count: openIssues,
      license: null,
      allow_forking: true,
      is_template: false,
      web_commit_signoff_required: false,
      topics: [],
      visibility: repo.private ? 'private' : 'public',
      forks: 0,
      open_issues: openIssues,
      watchers: 0,
      default_branch: repo.default_branch,
    };
    if (full) {
      Object.assign(o, { network_count: 0, subscribers_count: 0, temp_clone_token: '' });
      if (repo.fork && repo.parent && this.repos.has(repo.parent)) {
        o.parent = this.repoObj(this.repos.get(repo.parent));
        o.source = o.parent;
      }
    }
    return o;
  }

  association(login, repoKey) {
    const repo = this.repos.get(repoKey);
    if (repo && lc(repo.owner) === lc(login)) return 'OWNER';
    const role = this.permissions.get(repoKey)?.get(lc(login));
    if (role && role !== 'read') return repo && this.users.get(lc(repo.owner))?.type === 'Organization' ? 'MEMBER' : 'COLLABORATOR';
    const authored = [...this.pulls.values()].some((p) => p.base.repo === repoKey && p.merged && lc(this.issues.get(p.key).user) === lc(login));
    return authored ? 'CONTRIBUTOR' : 'NONE';
  }

  rollup(url, pred) {
    const rs = this.reactions.filter(pred);
    const o = { url, total_count: rs.length };
    for (const r of REACTIONS) o[r] = rs.filter((x) => x.content === r).length;
    return o;
  }

  issueObj(issue) {
    const repo = this.repos.get(issue.repo);
    const api = `${this.apiRepo(repo)}/issues/${issue.number}`;
    const html = `${HTML}/${repo.full_name}/${issue.is_pull ? 'pull' : 'issues'}/${issue.number}`;
    const o = {
      id: issue.id,
      node_id: nodeId(issue.is_pull ? 'PR' : 'I', issue.id),
      url: api,
      repository_url: this.apiRepo(repo),
      labels_url: `${api}/labels{/name}`,
      comments_url: `${api}/comments`,
      events_url: `${api}/events`,
      html_url: html,
      number: issue.number,
      state: issue.state,
      state_reason: issue.state === 'closed' ? 'completed' : null,
      title: issue.title,
      body: issue.body,
      user: this.userObj(issue.user),
      labels: [],
      assignee: null,
      assignees: [],
      milestone: null,
      locked: issue.locked,
      active_lock_reason: null,
      comments: [...this.issueComments.values()].filter((c) => c.repo === issue.repo && c.number === issue.number).length,
      closed_at: issue.closed_at,
      created_at: issue.created_at,
      updated_at: issue.updated_at,
      closed_by: null,
      author_association: this.association(issue.user, issue.repo),
      reactions: this.rollup(`${api}/reactions`, () => false),
      timeline_url: `${api}/timeline`,
    };
    if (issue.is_pull) {
      const pr = this.pulls.get(`${issue.repo}#${issue.number}`);
      o.draft = pr.draft;
      o.pull_request = {
        url: `${this.apiRepo(repo)}/pulls/${issue.number}`,
        html_url: html,
        diff_url: `${html}.diff`,
        patch_url: `${html}.patch`,
        merged_at: null,
      };
    }
    return o;
  }

  branchObj(side) {
    const repo = this.repos.get(side.repo);
    return {
      label: `${repo.owner}:${side.ref}`,
      ref: side.ref,
      sha: side.sha,
      user: this.userObj(repo.owner),
      repo: this.repoObj(repo),
    };
  }

  pullObj(pr, full = true) {
    const issue = this.issues.get(pr.key);
    const repo = this.repos.get(issue.repo);
    const api = `${this.apiRepo(repo)}/pulls/${issue.number}`;
    const html = `${HTML}/${repo.full_name}/pull/${issue.number}`;
    const issueApi = `${this.apiRepo(repo)}/issues/${issue.number}`;
    const statuses = `${this.apiRepo(repo)}/statuses/${pr.head.sha}`;
    const o = {
      url: api,
      id: pr.id,
      node_id: nodeId('PR', pr.id),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: issueApi,
      commits_url: `${api}/commits`,
      review_comments_url: `${api}/comments`,
      review_comment_url: `${this.apiRepo(repo)}/pulls/comments{/number}`,
      comments_url: `${issueApi}/comments`,
      statuses_url: statuses,
      number: issue.number,
      state: issue.state,
      locked: issue.locked,
      title: issue.title,
      user: this.userObj(issue.user),
      body: issue.body,
      labels: [],
      milestone: null,
      active_lock_reason: null,
      created_at: issue.created_at,
      updated_at: issue.updated_at,
      closed_at: issue.closed_at,
      merged_at: null,
      merge_commit_sha: null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      head: this.branchObj(pr.head),
      base: this.branchObj(pr.base),
      _links: {
        self: { href: api },
        html: { href: html },
        issue: { href: issueApi },
        comments: { href: `${issueApi}/comments` },
        review_comments: { href: `${api}/comments` },
        review_comment: { href: `${this.apiRepo(repo)}/pulls/comments{/number}` },
        commits: { href: `${api}/commits` },
        statuses: { href: statuses },
      },
      author_association: this.association(issue.user, issue.repo),
      auto_merge: null,
      draft: pr.draft,
    };
    if (full) {
      const files = pr.files.slice(0, MAX_PR_FILES);
      Object.assign(o, {
        merged: pr.merged,
        mergeable: issue.state === 'open' ? true : null,
        rebaseable: issue.state === 'open' ? true : null,
        mergeable_state: issue.state === 'open' ? 'clean' : 'unknown',
        merged_by: null,
        comments: [...this.issueComments.values()].filter((c) => c.repo === issue.repo && c.number === issue.number).length,
        review_comments: [...this.reviewComments.values()].filter((c) => c.repo === issue.repo && c.number === issue.number && !this.isPendingComment(c)).length,
        maintainer_can_modify: pr.maintainer_can_modify,
        commits: this.commitCount(pr),
        additions: files.reduce((n, f) => n + f.additions, 0),
        deletions: files.reduce((n, f) => n + f.deletions, 0),
        changed_files: pr.files.length,
      });
    }
    return o;
  }

  commitCount(pr) {
    const baseAnc = this.ancestors(pr.base.sha);
    let n = 0;
    const seen = new Set();
    const stack = [pr.head.sha];
    while (stack.length && n < 250) {
      const sha = stack.pop();
      if (seen.has(sha) || baseAnc.has(sha)) continue;
      seen.add(sha);
      n++;
      stack.push(...(this.commits.get(sha)?.parents || []));
    }
    return Math.max(n, 1);
  }

  ancestors(sha) {
    const seen = new Set();
    const stack = [sha];
    while (stack.length) {
      const s = stack.pop();
      if (!s || seen.has(s)) continue;
      seen.add(s);
      stack.push(...(this.commits.get(s)?.parents || []));
    }
    return seen;
  }

  diffEntryObj(pr, f) {
    const head = this.repos.get(pr.head.repo);
    const repo = this.repos.get(pr.base.repo);
    const o = {
      sha: f.sha,
      filename: f.filename,
      status: f.status,
      additions: f.additions,
      deletions: f.deletions,
      changes: f.changes,
      blob_url: `${HTML}/${head.full_name}/blob/${pr.head.sha}/${encPath(f.filename)}`,
      raw_url: `${HTML}/${head.full_name}/raw/${pr.head.sha}/${encPath(f.filename)}`,
      contents_url: `${this.apiRepo(repo)}/contents/${encPath(f.filename)}?ref=${pr.head.sha}`,
    };
    if (f.patch !== undefined && f.patch !== null) o.patch = f.patch;
    if (f.previous_filename) o.previous_filename = f.previous_filename;
    return o;
  }

  issueCommentObj(c) {
    const repo = this.repos.get(c.repo);
    const issue = this.issues.get(`${c.repo}#${c.number}`);
    const url = `${this.apiRepo(repo)}/issues/comments/${c.id}`;
    return {
      id: c.id,
      node_id: nodeId('IC', c.id),
      url,
      html_url: `${HTML}/${repo.full_name}/${issue?.is_pull ? 'pull' : 'issues'}/${c.number}#issuecomment-${c.id}`,
      body: c.body,
      user: this.userObj(c.user),
      created_at: c.created_at,
      updated_at: c.updated_at,
      issue_url: `${this.apiRepo(repo)}/issues/${c.number}`,
      author_association: this.association(c.user, c.repo),
      performed_via_github_app: null,
      reactions: this.rollup(`${url}/reactions`, (r) => r.comment_id === c.id),
    };
  }

  reactionObj(r) {
    return { id: r.id, node_id: nodeId('REA', r.id), user: this.userObj(r.user), content: r.content, created_at: r.created_at };
  }

  reviewObj(r) {
    const repo = this.repos.get(r.repo);
    const html = `${HTML}/${repo.full_name}/pull/${r.number}#pullrequestreview-${r.id}`;
    const prUrl = `${this.apiRepo(repo)}/pulls/${r.number}`;
    const o = {
      id: r.id,
      node_id: nodeId('PRR', r.id),
      user: this.userObj(r.user),
      body: r.body,
      state: r.state,
      html_url: html,
      pull_request_url: prUrl,
      author_association: this.association(r.user, r.repo),
      _links: { html: { href: html }, pull_request: { href: prUrl } },
      commit_id: r.commit_id,
    };
    if (r.submitted_at) o.submitted_at = r.submitted_at;
    return o;
  }

  reviewCommentObj(c) {
    const repo = this.repos.get(c.repo);
    const url = `${this.apiRepo(repo)}/pulls/comments/${c.id}`;
    const html = `${HTML}/${repo.full_name}/pull/${c.number}#discussion_r${c.id}`;
    const prUrl = `${this.apiRepo(repo)}/pulls/${c.number}`;
    const o = {
      url,
      pull_request_review_id: c.review_id,
      id: c.id,
      node_id: nodeId('PRRC', c.id),
      diff_hunk: c.diff_hunk,
      path: c.path,
      commit_id: c.commit_id,
      original_commit_id: c.commit_id,
      user: this.userObj(c.user),
      body: c.body,
      created_at: c.created_at,
      updated_at: c.updated_at,
      html_url: html,
      pull_request_url: prUrl,
      author_association: this.association(c.user, c.repo),
      _links: { self: { href: url }, html: { href: html }, pull_request: { href: prUrl } },
      reactions: this.rollup(`${url}/reactions`, () => false),
      subject_type: c.subject_type,
    };
    if (c.subject_type === 'line') {
      Object.assign(o, {
        position: c.position,
        original_position: c.position,
        start_line: c.start_line,
        original_start_line: c.start_line,
        start_side: c.start_line === null ? null : c.start_side,
        line: c.line,
        original_line: c.line,
        side: c.side,
      });
    }
    if (c.in_reply_to_id) o.in_reply_to_id = c.in_reply_to_id;
    return o;
  }

  isPendingComment(c) {
    return this.reviews.get(c.review_id)?.state === 'PENDING';
  }

  refObj(repo, ref, sha) {
    const api = this.apiRepo(repo);
    return {
      ref,
      node_id: nodeId('REF', `${repo.key}:${ref}`),
      url: `${api}/git/${encPath(ref)}`,
      object: { sha, type: 'commit', url: `${api}/git/commits/${sha}` },
    };
  }

  commitObj(repo, c) {
    const api = this.apiRepo(repo);
    return {
      sha: c.sha,
      node_id: nodeId('C', c.sha),
      url: `${api}/git/commits/${c.sha}`,
      html_url: `${HTML}/${repo.full_name}/commit/${c.sha}`,
      author: c.author,
      committer: c.committer,
      tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
      message: c.message,
      parents: c.parents.map((p) => ({ sha: p, url: `${api}/git/commits/${p}`, html_url: `${HTML}/${repo.full_name}/commit/${p}` })),
      verification: { verified: false, reason: 'unsigned', signature: null, payload: null, verified_at: null },
    };
  }

  treeObj(repo, sha, recursive) {
    const api = this.apiRepo(repo);
    const entry = (e, prefix) => {
      const o = { path: prefix + e.path, mode: e.mode, type: e.type, sha: e.sha };
      if (e.type === 'blob') {
        o.size = this.blobs.get(e.sha)?.length ?? 0;
        o.url = `${api}/git/blobs/${e.sha}`;
      } else if (e.type === 'tree') o.url = `${api}/git/trees/${e.sha}`;
      return o;
    };
    const out = [];
    const walk = (treeSha, prefix) => {
      const t = this.trees.get(treeSha);
      for (const e of this.levelOf(t)) {
        out.push(entry(e, prefix));
        if (recursive && e.type === 'tree') walk(e.sha, `${prefix}${e.path}/`);
      }
    };
    walk(sha, '');
    return { sha, url: `${api}/git/trees/${sha}`, tree: out, truncated: false };
  }

  levelOf(t) {
    return treeLevel(t.flat, (dir) => {
      const sub = new Map();
      for (const [p, e] of t.flat) if (p.startsWith(dir + '/')) sub.set(p.slice(dir.length + 1), e);
      return this.putTree(sub, { repo: t.repo, created: false });
    });
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

  // Moving a branch moves the pull requests whose head or base it is.
  refMoved(repoKey, ref, sha) {
    const m = /^refs\/heads\/(.+)$/.exec(ref);
    if (!m) return;
    for (const pr of this.pulls.values()) {
      if (this.issues.get(pr.key).state !== 'open') continue;
      if (pr.head.repo === repoKey && pr.head.ref === m[1]) {
        pr.head.sha = sha;
        if (pr.created) pr.files = this.computeFiles(pr);
      }
      if (pr.base.repo === repoKey && pr.base.ref === m[1]) {
        pr.base.sha = sha;
        if (pr.created) pr.files = this.computeFiles(pr);
      }
    }
  }

  mergeBase(a, b) {
    const anc = this.ancestors(b);
    const queue = [a];
    const seen = new Set();
    while (queue.length) {
      const s = queue.shift();
      if (!s || seen.has(s)) continue;
      if (anc.has(s)) return s;
      seen.add(s);
      queue.push(...(this.commits.get(s)?.parents || []));
    }
    return b;
  }

  // The files of a pull request the emulator created: base (merge base) tree against head tree.
  computeFiles(pr) {
    const baseCommit = this.commits.get(this.mergeBase(pr.head.sha, pr.base.sha));
    const headCommit = this.commits.get(pr.head.sha);
    const a = this.trees.get(baseCommit?.tree || EMPTY_TREE)?.flat || new Map();
    const b = this.trees.get(headCommit?.tree || EMPTY_TREE)?.flat || new Map();
    const paths = [...new Set([...a.keys(), ...b.keys()])].sort();
    const files = [];
    for (const path of paths) {
      const x = a.get(path);
      const y = b.get(path);
      if (x && y && x.sha === y.sha && x.mode === y.mode) continue;
      const oldText = x ? (this.blobs.get(x.sha) || Buffer.alloc(0)).toString('utf8') : '';
      const newText = y ? (this.blobs.get(y.sha) || Buffer.alloc(0)).toString('utf8') : '';
      const { patch, additions, deletions } = makePatch(oldText, newText);
      files.push({
        filename: path,
        status: !x ? 'added' : !y ? 'removed' : x.sha === y.sha ? 'changed' : 'modified',
        additions,
        deletions,
        changes: additions + deletions,
        patch,
        sha: (y || x).sha,
      });
    }
    return files;
  }

  // Where a review comment goes: {line, side, start_line, start_side, position, diff_hunk}, or
  // the error message GitHub gives.
  resolveComment(pr, c) {
    const file = pr.files.slice(0, MAX_PR_FILES).find((f) => f.filename === c.path);
    if (!file) return { error: 'Path could not be resolved' };
    if (typeof file.patch !== 'string') return { error: 'Line could not be resolved' };
    const hunks = parsePatch(file.patch);
    let end;
    let side;
    if (c.line !== undefined && c.line !== null) {
      side = c.side ?? 'RIGHT';
      if (side !== 'LEFT' && side !== 'RIGHT') return { error: 'Line could not be resolved' };
      end = findLine(hunks, side, c.line);
    } else if (c.position !== undefined && c.position !== null) {
      end = findPosition(hunks, c.position);
      if (end) side = end.line.kind === '-' ? 'LEFT' : 'RIGHT';
    } else {
      return { error: 'Line could not be resolved' };
    }
    if (!end) return { error: 'Line could not be resolved' };
    const line = side === 'LEFT' ? end.line.oldNo : end.line.newNo;
    let startLine = null;
    let startSide = null;
    if (c.start_line !== undefined && c.start_line !== null) {
      startSide = c.start_side ?? side;
      if (startSide !== 'LEFT' && startSide !== 'RIGHT') return { error: 'Line could not be resolved' };
      const start = findLine(hunks, startSide, c.start_line);
      if (!start) return { error: 'Line could not be resolved' };
      if (start.hunk !== end.hunk) return { error: 'Pull request review thread start line must be part of the same hunk as the line.' };
      if (start.line.position >= end.line.position) return { error: 'Pull request review thread start line must precede the end line.' };
      startLine = c.start_line;
    } else if (c.start_side !== undefined && c.start_side !== null) {
      return { error: 'Pull request review thread start side requires a start line.' };
    }
    return {
      line,
      side,
      start_line: startLine,
      start_side: startSide,
      position: end.line.position,
      diff_hunk: diffHunk(end.hunk, end.line),
    };
  }

  addReviewComment(repo, pr, review, c, where, user, at) {
    const id = this.newId();
    const rc = {
      id,
      repo: repo.key,
      number: this.issues.get(pr.key).number,
      review_id: review.id,
      user,
      body: c.body,
      path: c.path,
      commit_id: review.commit_id,
      subject_type: where.subject_type || 'line',
      line: where.line ?? null,
      side: where.side ?? null,
      start_line: where.start_line ?? null,
      start_side: where.start_side ?? null,
      position: where.position ?? null,
      diff_hunk: where.diff_hunk ?? '',
      in_reply_to_id: where.in_reply_to_id,
      created_at: at,
      updated_at: at,
    };
    this.reviewComments.set(id, rc);
    review.comment_ids.push(id);
    return rc;
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

export { MAX_PR_FILES, REACTIONS, ROLE_PERMISSION, HTML, isSha, lc, chars, commitText, EMPTY_TREE };
