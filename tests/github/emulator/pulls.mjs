// What writes do to pull requests: the commit graph (ancestors, merge base, commit count),
// branches that move the pull requests on them, the files of a pull request computed from
// trees, and where a review comment lands in a file's patch.

import { EMPTY_TREE, diffHunk, findLine, findPosition, makePatch, parsePatch } from './git.mjs';
import { MAX_PR_FILES } from './common.mjs';

// Installed on Emulator's prototype (see emulator.mjs): `this` is the emulator.
export class PullRequestState {
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
}
