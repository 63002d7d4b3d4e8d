// Endpoint handlers, by the operationId of GitHub's OpenAPI description. Each takes the
// emulator and the request context {params, query, body, user, token, url, docUrl} and
// returns {status, body, headers}; errors GitHub would answer are thrown as HttpError.

import { HttpError, MAX_PR_FILES, ROLE_PERMISSION, chars, isSha, lc } from './common.mjs';
import { commitText, gitObjectSha } from './git.mjs';

const ok = (body, headers) => ({ status: 200, body, headers });
const created = (body, location) => ({ status: 201, body, headers: location ? { location } : {} });
const noContent = () => ({ status: 204 });

const VALID_MODES = { '100644': 'blob', '100755': 'blob', '120000': 'blob', '040000': 'tree', '160000': 'commit' };

function validRefName(ref) {
  // git check-ref-format, roughly, plus GitHub's "refs/ and at least two slashes".
  if (!/^refs\/[^/]+\/.+/.test(ref)) return false;
  if (/(^|\/)\.|\.\.|[\x00-\x20\x7f~^:?*[\\]|@\{|\/\/|\/$|\.lock(\/|$)|\.$/.test(ref)) return false;
  return true;
}

export const handlers = {
  // ----- repository, pull request, issue
  'repos/get': (e, ctx) => ok(e.repoObj(e.repoOf(ctx), true)),

  'pulls/get': (e, ctx) => {
    const repo = e.repoOf(ctx);
    return ok(e.pullObj(e.pullOf(ctx, repo, ctx.params.pull_number)));
  },

  'issues/get': (e, ctx) => {
    const repo = e.repoOf(ctx);
    return ok(e.issueObj(e.issueOf(ctx, repo, ctx.params.issue_number)));
  },

  'pulls/list-files': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const { slice, headers } = e.paginate(ctx, pr.files, MAX_PR_FILES);
    return ok(slice.map((f) => e.diffEntryObj(pr, f)), headers);
  },

  'repos/get-collaborator-permission-level': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const u = e.users.get(lc(ctx.params.username));
    if (!u) throw e.notFound(ctx);
    let role = e.permissions.get(repo.key)?.get(lc(u.login));
    if (!role && lc(repo.owner) === lc(u.login) && u.type !== 'Organization') role = 'admin';
    if (!role) role = repo.private ? 'none' : 'read';
    const permission = ROLE_PERMISSION[role];
    const rank = ['none', 'read', 'triage', 'write', 'maintain', 'admin'].indexOf(role);
    const user = {
      ...e.userObj(u.login),
      permissions: { admin: rank >= 5, maintain: rank >= 4, push: rank >= 3, triage: rank >= 2, pull: rank >= 1 },
      role_name: role,
    };
    return ok({ permission, role_name: role, user });
  },

  // ----- reactions on issue comments
  'reactions/create-for-issue-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.issueComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key) throw e.notFound(ctx);
    const existing = e.reactions.find((r) => r.comment_id === c.id && lc(r.user) === lc(ctx.user) && r.content === ctx.body.content);
    if (existing) return ok(e.reactionObj(existing));
    const r = { id: e.newId(), comment_id: c.id, repo: repo.key, user: ctx.user, content: ctx.body.content, created_at: e.now() };
    e.reactions.push(r);
    return created(e.reactionObj(r));
  },

  'reactions/list-for-issue-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.issueComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key) throw e.notFound(ctx);
    const rs = e.reactions.filter((r) => r.comment_id === c.id && (!ctx.query.content || r.content === ctx.query.content));
    const { slice, headers } = e.paginate(ctx, rs);
    return ok(slice.map((r) => e.reactionObj(r)), headers);
  },

  'reactions/delete-for-issue-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const i = e.reactions.findIndex((r) => r.id === ctx.params.reaction_id && r.comment_id === ctx.params.comment_id && r.repo === repo.key);
    if (i < 0) throw e.notFound(ctx);
    e.reactions.splice(i, 1);
    return noContent();
  },

  // ----- issue comments
  'issues/list-comments': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const issue = e.issueOf(ctx, repo, ctx.params.issue_number);
    const since = ctx.query.since ? Date.parse(ctx.query.since) : null;
    const cs = [...e.issueComments.values()]
      .filter((c) => c.repo === repo.key && c.number === issue.number && (since === null || Date.parse(c.updated_at) >= since))
      .sort((a, b) => a.id - b.id);
    const { slice, headers } = e.paginate(ctx, cs);
    return ok(slice.map((c) => e.issueCommentObj(c)), headers);
  },

  'issues/create-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const issue = e.issueOf(ctx, repo, ctx.params.issue_number);
    e.checkCommentBody(ctx, ctx.body.body, 'IssueComment');
    if (issue.locked) throw new HttpError(403, { message: 'Unable to create comment because issue is locked.', documentation_url: ctx.docUrl });
    const at = e.now();
    const c = { id: e.newId(), repo: repo.key, number: issue.number, user: ctx.user, body: ctx.body.body, created_at: at, updated_at: at };
    e.issueComments.set(c.id, c);
    e.touch(issue, at);
    const obj = e.issueCommentObj(c);
    return created(obj, obj.url);
  },

  'issues/get-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.issueComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key) throw e.notFound(ctx);
    return ok(e.issueCommentObj(c));
  },

  'issues/update-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.issueComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key) throw e.notFound(ctx);
    e.checkCommentBody(ctx, ctx.body.body, 'IssueComment');
    c.body = ctx.body.body;
    c.updated_at = e.now();
    return ok(e.issueCommentObj(c));
  },

  'issues/delete-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.issueComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key) throw e.notFound(ctx);
    e.issueComments.delete(c.id);
    e.reactions = e.reactions.filter((r) => r.comment_id !== c.id);
    return noContent();
  },

  // ----- review comments
  'pulls/list-review-comments': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const number = e.issues.get(pr.key).number;
    const since = ctx.query.since ? Date.parse(ctx.query.since) : null;
    let cs = [...e.reviewComments.values()].filter(
      (c) =>
        c.repo === repo.key &&
        c.number === number &&
        (!e.isPendingComment(c) || lc(c.user) === lc(ctx.user)) &&
        (since === null || Date.parse(c.updated_at) >= since),
    );
    const key = ctx.query.sort === 'updated' ? 'updated_at' : 'id';
    cs.sort((a, b) => (key === 'id' ? a.id - b.id : Date.parse(a.updated_at) - Date.parse(b.updated_at) || a.id - b.id));
    if (ctx.query.sort && ctx.query.direction === 'desc') cs = cs.reverse();
    const { slice, headers } = e.paginate(ctx, cs);
    return ok(slice.map((c) => e.reviewCommentObj(c)), headers);
  },

  'pulls/get-review-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.reviewComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key || (e.isPendingComment(c) && lc(c.user) !== lc(ctx.user))) throw e.notFound(ctx);
    return ok(e.reviewCommentObj(c));
  },

  'pulls/update-review-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.reviewComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key || (e.isPendingComment(c) && lc(c.user) !== lc(ctx.user))) throw e.notFound(ctx);
    e.checkCommentBody(ctx, ctx.body.body, 'PullRequestReviewComment');
    c.body = ctx.body.body;
    c.updated_at = e.now();
    return ok(e.reviewCommentObj(c));
  },

  'pulls/delete-review-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.reviewComments.get(ctx.params.comment_id);
    if (!c || c.repo !== repo.key || (e.isPendingComment(c) && lc(c.user) !== lc(ctx.user))) throw e.notFound(ctx);
    e.reviewComments.delete(c.id);
    const review = e.reviews.get(c.review_id);
    if (review) review.comment_ids = review.comment_ids.filter((x) => x !== c.id);
    return noContent();
  },

  'pulls/create-review-comment': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const issue = e.issues.get(pr.key);
    const b = ctx.body;
    e.checkCommentBody(ctx, b.body, 'PullRequestReviewComment');
    if (!e.commits.has(b.commit_id)) throw e.failed(ctx, [{ resource: 'PullRequestReviewComment', code: 'invalid', field: 'commit_id' }]);
    let where;
    if (b.in_reply_to !== undefined) {
      const parent = e.reviewComments.get(b.in_reply_to);
      if (!parent || parent.repo !== repo.key || parent.number !== issue.number) throw e.notFound(ctx);
      where = { ...parent, in_reply_to_id: parent.in_reply_to_id || parent.id };
    } else if (b.subject_type === 'file') {
      if (!pr.files.slice(0, MAX_PR_FILES).some((f) => f.filename === b.path)) {
        throw e.failed(ctx, [{ resource: 'PullRequestReviewComment', code: 'custom', field: 'path', message: 'path could not be resolved' }]);
      }
      where = { subject_type: 'file', diff_hunk: '' };
    } else {
      where = e.resolveComment(pr, b);
      if (where.error) {
        throw e.failed(ctx, [{ resource: 'PullRequestReviewComment', code: 'custom', field: 'pull_request_review_thread.line', message: where.error }]);
      }
    }
    const at = e.now();
    const review = { id: e.newId(), repo: repo.key, number: issue.number, user: ctx.user, body: '', state: 'COMMENTED', commit_id: b.commit_id, submitted_at: at, comment_ids: [] };
    e.reviews.set(review.id, review);
    const rc = e.addReviewComment(repo, pr, review, { body: b.body, path: where.path || b.path }, where, ctx.user, at);
    e.touch(issue, at);
    const obj = e.reviewCommentObj(rc);
    return created(obj, obj.url);
  },

  // ----- reviews
  'pulls/create-review': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const issue = e.issues.get(pr.key);
    const b = ctx.body || {};
    const event = b.event;
    const comments = b.comments || [];
    const hasBody = typeof b.body === 'string' && b.body.trim() !== '';
    // The documented rule: a body is required for REQUEST_CHANGES and COMMENT.
    if ((event === 'REQUEST_CHANGES' || event === 'COMMENT') && !hasBody) {
      throw e.unprocessable(ctx, [`Review body is required when event is ${event}`]);
    }
    if (typeof b.body === 'string' && chars(b.body) > 65536) {
      throw e.unprocessable(ctx, ['Body is too long (maximum is 65536 characters)']);
    }
    if (issue.state !== 'open' && event) {
      throw e.unprocessable(ctx, ['Can not review a closed pull request']);
    }
    const commitId = b.commit_id ?? pr.head.sha;
    if (!e.commits.has(commitId)) throw e.unprocessable(ctx, [`No commit found for SHA: ${commitId}`]);
    if (lc(ctx.user) === lc(issue.user) && event === 'APPROVE') throw e.unprocessable(ctx, ['Can not approve your own pull request']);
    if (lc(ctx.user) === lc(issue.user) && event === 'REQUEST_CHANGES') throw e.unprocessable(ctx, ['Can not request changes on your own pull request']);
    if (event === 'APPROVE' && lc(ctx.user) === 'github-actions[bot]' && !repo.actions_can_create_and_approve_prs) {
      throw e.unprocessable(ctx, ['GitHub Actions is not permitted to approve pull requests.']);
    }
    if (!event && [...e.reviews.values()].some((r) => r.repo === repo.key && r.number === issue.number && r.state === 'PENDING' && lc(r.user) === lc(ctx.user))) {
      throw e.unprocessable(ctx, ['User can only have one pending review per pull request']);
    }
    const resolved = [];
    const errors = [];
    for (const c of comments) {
      if (typeof c.body !== 'string' || c.body.trim() === '') {
        errors.push('Body can\u2019t be blank');
        continue;
      }
      const where = e.resolveComment(pr, c);
      if (where.error) errors.push(where.error);
      else resolved.push({ c, where });
    }
    if (errors.length) throw e.unprocessable(ctx, [...new Set(errors)]);
    const at = e.now();
    const state = { APPROVE: 'APPROVED', REQUEST_CHANGES: 'CHANGES_REQUESTED', COMMENT: 'COMMENTED' }[event] || 'PENDING';
    const review = {
      id: e.newId(),
      repo: repo.key,
      number: issue.number,
      user: ctx.user,
      body: b.body ?? '',
      state,
      commit_id: commitId,
      submitted_at: state === 'PENDING' ? null : at,
      comment_ids: [],
    };
    e.reviews.set(review.id, review);
    for (const { c, where } of resolved) e.addReviewComment(repo, pr, review, c, where, ctx.user, at);
    e.touch(issue, at);
    return ok(e.reviewObj(review));
  },

  'pulls/list-reviews': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const number = e.issues.get(pr.key).number;
    const rs = [...e.reviews.values()]
      .filter((r) => r.repo === repo.key && r.number === number && (r.state !== 'PENDING' || lc(r.user) === lc(ctx.user)))
      .sort((a, b) => a.id - b.id);
    const { slice, headers } = e.paginate(ctx, rs);
    return ok(slice.map((r) => e.reviewObj(r)), headers);
  },

  'pulls/get-review': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const r = e.reviews.get(ctx.params.review_id);
    if (!r || r.repo !== repo.key || r.number !== e.issues.get(pr.key).number || (r.state === 'PENDING' && lc(r.user) !== lc(ctx.user))) throw e.notFound(ctx);
    return ok(e.reviewObj(r));
  },

  // ----- git data
  'git/create-blob': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const enc = ctx.body.encoding ?? 'utf-8';
    let buf;
    if (enc === 'utf-8' || enc === 'utf8') buf = Buffer.from(ctx.body.content, 'utf8');
    else if (enc === 'base64') buf = Buffer.from(ctx.body.content, 'base64');
    else throw e.failed(ctx, [{ resource: 'Blob', code: 'custom', field: 'encoding', message: `encoding must be "utf-8" or "base64", not ${JSON.stringify(enc)}` }]);
    const sha = e.putBlob(buf);
    const url = `${e.apiRepo(repo)}/git/blobs/${sha}`;
    return created({ url, sha }, url);
  },

  'git/get-blob': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const buf = e.blobs.get(ctx.params.file_sha);
    if (!buf) throw e.notFound(ctx);
    const b64 = buf.toString('base64').replace(/.{60}/g, '$&\n');
    return ok({
      sha: ctx.params.file_sha,
      node_id: `B_${Buffer.from(ctx.params.file_sha).toString('base64url')}`,
      size: buf.length,
      url: `${e.apiRepo(repo)}/git/blobs/${ctx.params.file_sha}`,
      content: b64.endsWith('\n') || b64 === '' ? b64 : b64 + '\n',
      encoding: 'base64',
    });
  },

  'git/create-tree': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const b = ctx.body;
    let flat = new Map();
    if (b.base_tree !== undefined) {
      const base = e.trees.get(b.base_tree);
      if (!base) throw e.plain422(ctx, `base_tree ${b.base_tree} is not a valid tree oid`);
      flat = new Map(base.flat);
    }
    for (const [i, t] of b.tree.entries()) {
      const bad = (msg) => e.plain422(ctx, `tree.${i}: ${msg}`);
      if (typeof t.path !== 'string' || t.path === '' || t.path.startsWith('/') || t.path.endsWith('/') || t.path.split('/').some((s) => s === '' || s === '.' || s === '..' || s === '.git')) {
        throw bad(`path ${JSON.stringify(t.path)} is invalid`);
      }
      if (!t.mode || !t.type) throw bad('mode and type are required');
      if (VALID_MODES[t.mode] !== t.type) throw bad(`mode ${t.mode} does not go with type ${t.type}`);
      const hasSha = 'sha' in t;
      const hasContent = 'content' in t;
      if (hasSha && hasContent) throw bad('Must supply either tree.sha or tree.content, not both');
      if (!hasSha && !hasContent) throw bad('Must supply tree.sha or tree.content');
      const under = (p) => p === t.path || p.startsWith(t.path + '/');
      if (hasSha && t.sha === null) {
        const before = flat.size;
        for (const p of [...flat.keys()]) if (under(p)) flat.delete(p);
        if (flat.size === before) e.note(`git/create-tree: deleting ${t.path}, which is not in the base tree (GitHub may reject this)`);
        continue;
      }
      for (const p of [...flat.keys()]) if (under(p) || t.path.startsWith(p + '/')) flat.delete(p);
      if (hasContent) {
        if (t.type !== 'blob') throw bad('content can only be given for a blob');
        flat.set(t.path, { mode: t.mode, type: 'blob', sha: e.putBlob(Buffer.from(t.content, 'utf8')) });
      } else if (t.type === 'blob') {
        if (!e.blobs.has(t.sha)) throw bad(`tree.sha ${t.sha} is not a valid blob`);
        flat.set(t.path, { mode: t.mode, type: 'blob', sha: t.sha });
      } else if (t.type === 'tree') {
        const sub = e.trees.get(t.sha);
        if (!sub) throw bad(`tree.sha ${t.sha} is not a valid tree`);
        for (const [p, x] of sub.flat) flat.set(`${t.path}/${p}`, x);
      } else {
        if (!isSha(t.sha)) throw bad(`tree.sha ${t.sha} is not a valid commit`);
        flat.set(t.path, { mode: t.mode, type: 'commit', sha: t.sha });
      }
    }
    const sha = e.putTree(flat, { repo: repo.key, created: true, base_tree: b.base_tree ?? null, sent: b.tree });
    const obj = e.treeObj(repo, sha, false);
    return created(obj, obj.url);
  },

  'git/get-tree': (e, ctx) => {
    const repo = e.repoOf(ctx);
    let sha = ctx.params.tree_sha;
    if (!e.trees.has(sha)) {
      const refSha = e.refMap(repo.key).get(`refs/heads/${sha}`) || e.refMap(repo.key).get(`refs/tags/${sha}`) || e.refMap(repo.key).get(sha);
      const c = e.commits.get(refSha || sha);
      if (!c) throw e.notFound(ctx);
      sha = c.tree;
    }
    return ok(e.treeObj(repo, sha, ctx.query.recursive !== undefined));
  },

  'git/create-commit': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const b = ctx.body;
    if (!e.trees.has(b.tree)) throw e.plain422(ctx, `Tree SHA does not exist`);
    const parents = b.parents || [];
    for (const p of parents) if (!e.commits.has(p)) throw e.plain422(ctx, 'Parent SHA does not exist or is not a commit object');
    const date = e.now();
    const u = e.users.get(lc(ctx.user));
    const me = { name: u.login, email: `${u.id}+${u.login}@users.noreply.github.com`, date };
    const author = b.author ? { name: b.author.name, email: b.author.email, date: b.author.date || date } : me;
    const committer = b.committer ? { name: b.committer.name ?? author.name, email: b.committer.email ?? author.email, date: b.committer.date || date } : { ...author, date };
    const c = { tree: b.tree, parents, author, committer, message: b.message };
    c.sha = gitObjectSha('commit', commitText(c));
    c.repo = repo.key;
    c.created = true;
    if (!e.commits.has(c.sha)) e.commits.set(c.sha, c);
    const obj = e.commitObj(repo, e.commits.get(c.sha));
    return created(obj, obj.url);
  },

  'git/get-commit': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const c = e.commits.get(ctx.params.commit_sha);
    if (!c) throw e.notFound(ctx);
    return ok(e.commitObj(repo, c));
  },

  // ----- refs
  'git/get-ref': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const ref = `refs/${ctx.params.ref}`;
    if (ctx.params.ref.startsWith('refs/')) e.note(`git/get-ref: ref "${ctx.params.ref}" starts with refs/; GitHub wants "heads/<branch>" and answers 404`);
    const sha = e.refMap(repo.key).get(ref);
    if (!sha) throw e.notFound(ctx);
    return ok(e.refObj(repo, ref, sha));
  },

  'git/create-ref': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const { ref, sha } = ctx.body;
    if (!validRefName(ref)) throw e.plain422(ctx, `${ref} is not a valid ref name: it must start with 'refs/' and have at least two slashes`);
    if (!e.commits.has(sha)) throw e.plain422(ctx, 'Object does not exist');
    const refs = e.refMap(repo.key);
    if (refs.has(ref)) throw e.plain422(ctx, 'Reference already exists');
    refs.set(ref, sha);
    e.refMoved(repo.key, ref, sha);
    const obj = e.refObj(repo, ref, sha);
    return created(obj, obj.url);
  },

  'git/update-ref': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const ref = `refs/${ctx.params.ref}`;
    const refs = e.refMap(repo.key);
    const old = refs.get(ref);
    if (!old) throw e.plain422(ctx, 'Reference does not exist');
    const { sha, force } = ctx.body;
    if (!e.commits.has(sha)) throw e.plain422(ctx, 'Object does not exist');
    if (!force && !e.ancestors(sha).has(old)) throw e.plain422(ctx, 'Update is not a fast forward');
    refs.set(ref, sha);
    e.refMoved(repo.key, ref, sha);
    return ok(e.refObj(repo, ref, sha));
  },

  'git/delete-ref': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const ref = `refs/${ctx.params.ref}`;
    const refs = e.refMap(repo.key);
    if (!refs.has(ref)) throw e.plain422(ctx, 'Reference does not exist');
    if (ref === `refs/heads/${repo.default_branch}`) throw e.plain422(ctx, 'Cannot delete the default branch');
    refs.delete(ref);
    const branch = ref.replace(/^refs\/heads\//, '');
    for (const pr of e.pulls.values()) {
      const issue = e.issues.get(pr.key);
      if (issue.state === 'open' && pr.head.repo === repo.key && pr.head.ref === branch) {
        issue.state = 'closed';
        issue.closed_at = issue.updated_at = e.now();
      }
    }
    return noContent();
  },

  // ----- pull requests
  'pulls/list': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const state = ctx.query.state || 'open';
    let headOwner = null;
    let headRef = null;
    if (ctx.query.head !== undefined) {
      const i = ctx.query.head.indexOf(':');
      if (i < 0) e.note(`pulls/list: head=${JSON.stringify(ctx.query.head)} has no "owner:" prefix; GitHub ignores such a filter and lists every pull request`);
      else {
        headOwner = lc(ctx.query.head.slice(0, i));
        headRef = ctx.query.head.slice(i + 1);
      }
    }
    const sort = ctx.query.sort || 'created';
    const direction = ctx.query.direction || (sort === 'created' ? 'desc' : 'asc');
    let prs = [...e.pulls.values()].filter((pr) => {
      const issue = e.issues.get(pr.key);
      if (pr.base.repo !== repo.key) return false;
      if (state !== 'all' && issue.state !== state) return false;
      if (ctx.query.base !== undefined && pr.base.ref !== ctx.query.base) return false;
      if (headOwner !== null && (lc(e.repos.get(pr.head.repo).owner) !== headOwner || pr.head.ref !== headRef)) return false;
      return true;
    });
    const keyOf = (pr) => {
      const issue = e.issues.get(pr.key);
      return sort === 'updated' ? Date.parse(issue.updated_at) : issue.number;
    };
    prs.sort((a, b) => keyOf(a) - keyOf(b));
    if (direction === 'desc') prs = prs.reverse();
    const { slice, headers } = e.paginate(ctx, prs);
    return ok(slice.map((pr) => e.pullObj(pr, false)), headers);
  },

  'pulls/create': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const b = ctx.body;
    if (b.issue !== undefined) throw new HttpError(501, { message: 'emulator: converting an issue to a pull request is not emulated' });
    if (typeof b.title !== 'string' || b.title.trim() === '') throw e.failed(ctx, [{ resource: 'PullRequest', code: 'missing_field', field: 'title' }]);
    if (lc(ctx.user) === 'github-actions[bot]' && !repo.actions_can_create_and_approve_prs) {
      throw new HttpError(403, { message: 'GitHub Actions is not permitted to create or approve pull requests.', documentation_url: ctx.docUrl });
    }
    let headOwner = repo.owner;
    let headRef = b.head;
    const colon = b.head.indexOf(':');
    if (colon >= 0) {
      headOwner = b.head.slice(0, colon);
      headRef = b.head.slice(colon + 1);
    }
    let headRepo = b.head_repo ? e.repos.get(lc(b.head_repo)) : lc(headOwner) === lc(repo.owner) ? repo : e.repos.get(lc(`${headOwner}/${repo.name}`));
    const headSha = headRepo && e.refMap(headRepo.key).get(`refs/heads/${headRef}`);
    if (!headSha) throw e.failed(ctx, [{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
    const baseSha = e.refMap(repo.key).get(`refs/heads/${b.base}`);
    if (!baseSha) throw e.failed(ctx, [{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
    const label = `${headRepo.owner}:${headRef}`;
    for (const pr of e.pulls.values()) {
      if (pr.base.repo === repo.key && pr.base.ref === b.base && pr.head.repo === headRepo.key && pr.head.ref === headRef && e.issues.get(pr.key).state === 'open') {
        throw e.failed(ctx, [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${label}.` }]);
      }
    }
    if (e.ancestors(baseSha).has(headSha)) {
      throw e.failed(ctx, [{ resource: 'PullRequest', code: 'custom', message: `No commits between ${b.base} and ${headRef}` }]);
    }
    const number = Math.max(0, ...[...e.issues.values()].filter((i) => i.repo === repo.key).map((i) => i.number)) + 1;
    const at = e.now();
    const key = `${repo.key}#${number}`;
    e.issues.set(key, {
      repo: repo.key,
      number,
      id: e.newId(),
      title: b.title,
      body: b.body ?? null,
      user: ctx.user,
      state: 'open',
      locked: false,
      created_at: at,
      updated_at: at,
      closed_at: null,
      is_pull: true,
    });
    const pr = {
      key,
      id: e.newId(),
      head: { repo: headRepo.key, ref: headRef, sha: headSha },
      base: { repo: repo.key, ref: b.base, sha: baseSha },
      files: [],
      draft: !!b.draft,
      merged: false,
      maintainer_can_modify: headRepo.key === repo.key ? false : b.maintainer_can_modify ?? true,
      created: true,
    };
    pr.files = e.computeFiles(pr);
    e.pulls.set(key, pr);
    const obj = e.pullObj(pr);
    return created(obj, obj.url);
  },

  'pulls/update': (e, ctx) => {
    const repo = e.repoOf(ctx);
    const pr = e.pullOf(ctx, repo, ctx.params.pull_number);
    const issue = e.issues.get(pr.key);
    const b = ctx.body || {};
    if (b.base !== undefined) {
      const sha = e.refMap(repo.key).get(`refs/heads/${b.base}`);
      if (!sha) throw e.failed(ctx, [{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
    }
    if (b.state === 'open' && issue.state === 'closed') {
      const base = b.base ?? pr.base.ref;
      const dup = [...e.pulls.values()].find(
        (o) => o !== pr && o.base.repo === repo.key && o.base.ref === base && o.head.repo === pr.head.repo && o.head.ref === pr.head.ref && e.issues.get(o.key).state === 'open',
      );
      if (dup) throw e.failed(ctx, [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${e.repos.get(pr.head.repo).owner}:${pr.head.ref}.` }]);
      if (!e.refMap(pr.head.repo).has(`refs/heads/${pr.head.ref}`)) throw e.failed(ctx, [{ resource: 'PullRequest', code: 'custom', message: 'The head branch of this pull request was deleted.' }]);
    }
    const at = e.now();
    if (b.title !== undefined) issue.title = b.title;
    if (b.body !== undefined) issue.body = b.body;
    if (b.maintainer_can_modify !== undefined) pr.maintainer_can_modify = b.maintainer_can_modify;
    if (b.base !== undefined && b.base !== pr.base.ref) {
      pr.base.ref = b.base;
      pr.base.sha = e.refMap(repo.key).get(`refs/heads/${b.base}`);
      if (pr.created) pr.files = e.computeFiles(pr);
    }
    if (b.state !== undefined && b.state !== issue.state) {
      issue.state = b.state;
      issue.closed_at = b.state === 'closed' ? at : null;
    }
    e.touch(issue, at);
    return ok(e.pullObj(pr));
  },
};
