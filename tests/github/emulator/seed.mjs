// Seeding: the emulator's whole state replaced by the one a test describes (see README.md).

import { ROLE_PERMISSION, SEED_TIME, isSha, iso, lc, seedError } from './common.mjs';
import { gitObjectSha } from './git.mjs';

// Installed on Emulator's prototype (see emulator.mjs): `this` is the emulator.
export class Seeding {
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
    for (const i of s.issues || []) this.seedIssue(i, tick);
    for (const c of s.issue_comments || []) this.seedIssueComment(c, tick);
    const maxSeeded = Math.max(0, ...this.issueComments.keys());
    if (maxSeeded >= this.nextObjectId) this.nextObjectId = maxSeeded + 1;
  }

  seedIssue(i, tick) {
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

  seedIssueComment(c, tick) {
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
}
