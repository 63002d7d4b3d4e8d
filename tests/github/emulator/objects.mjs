// GitHub's objects: the JSON the API returns for the emulator's records (users, repositories,
// issues, pull requests, comments, reviews, reactions, refs, commits, trees).

import { HTML, MAX_PR_FILES, REACTIONS, encPath, lc, nodeId } from './common.mjs';
import { treeLevel } from './git.mjs';

// Installed on Emulator's prototype (see emulator.mjs): `this` is the emulator.
export class GitHubObjects {
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
      ...repoUrls(api),
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
}

// The URL templates of a repository object, in GitHub's order.
function repoUrls(api) {
  return {
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
  };
}
