// Git objects with real git object ids (so the same content gives the same sha, as in git),
// unified-diff parsing (where a review comment may go) and a small line diff (the `patch` of a
// pull request the emulator creates).

import { createHash } from 'node:crypto';

export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

export function gitObjectSha(type, content) {
  const buf = Buffer.isBuffer(content) ? content : Buffer.from(content);
  return createHash('sha1').update(`${type} ${buf.length}\0`).update(buf).digest('hex');
}

// A tree is kept flat: path -> {mode, type ('blob'|'commit'), sha}. Directories are derived.
// Writes the nested git trees of `flat`, calling register(sha, flatOfThatDirectory) for each
// directory (root included), and returns the root tree's sha.
export function writeTree(flat, register) {
  const dirs = new Map(); // first component -> sub-flat
  const files = [];
  for (const [path, entry] of flat) {
    const i = path.indexOf('/');
    if (i < 0) files.push([path, entry]);
    else {
      const d = path.slice(0, i);
      if (!dirs.has(d)) dirs.set(d, new Map());
      dirs.get(d).set(path.slice(i + 1), entry);
    }
  }
  const entries = files.map(([name, e]) => ({ name, mode: e.mode, sha: e.sha, sortKey: name }));
  for (const [name, sub] of dirs) {
    entries.push({ name, mode: '40000', sha: writeTree(sub, register), sortKey: name + '/' });
  }
  entries.sort((a, b) => Buffer.compare(Buffer.from(a.sortKey), Buffer.from(b.sortKey)));
  const body = Buffer.concat(
    entries.map((e) => Buffer.concat([Buffer.from(`${e.mode.replace(/^0+/, '')} ${e.name}\0`), Buffer.from(e.sha, 'hex')])),
  );
  const sha = gitObjectSha('tree', body);
  register(sha, flat);
  return sha;
}

// Entries of one tree level for the API: [{path, mode, type, sha}] with directories as trees.
export function treeLevel(flat, shaOfDir) {
  const out = new Map();
  for (const [path, e] of flat) {
    const i = path.indexOf('/');
    if (i < 0) out.set(path, { path, mode: e.mode, type: e.type, sha: e.sha });
    else {
      const d = path.slice(0, i);
      if (!out.has(d)) out.set(d, { path: d, mode: '040000', type: 'tree', sha: shaOfDir(d) });
    }
  }
  return [...out.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export function commitText({ tree, parents, author, committer, message }) {
  const who = (p) => `${p.name} <${p.email}> ${Math.floor(Date.parse(p.date) / 1000)} +0000`;
  return [`tree ${tree}`, ...parents.map((p) => `parent ${p}`), `author ${who(author)}`, `committer ${who(committer)}`, '', message].join('\n');
}

// ---------------------------------------------------------------------------------------
// Unified diff (GitHub's `patch`: hunks only, no file header).

// -> [{header, oldStart, oldLines, newStart, newLines, lines: [{kind, text, oldNo, newNo, position}]}]
// `position` is GitHub's legacy diff position: 1 for the line below the first @@ header,
// counting on through later hunk headers.
export function parsePatch(patch) {
  const hunks = [];
  let position = -1;
  let cur = null;
  let oldNo = 0;
  let newNo = 0;
  for (const text of patch.split('\n')) {
    position++;
    const h = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(text);
    if (h) {
      cur = {
        header: text,
        headerPosition: position,
        oldStart: +h[1],
        oldLines: h[2] === undefined ? 1 : +h[2],
        newStart: +h[3],
        newLines: h[4] === undefined ? 1 : +h[4],
        lines: [],
      };
      hunks.push(cur);
      oldNo = cur.oldStart;
      newNo = cur.newStart;
      continue;
    }
    if (!cur) continue;
    const kind = text[0];
    if (kind === '+') cur.lines.push({ kind, text, oldNo: null, newNo: newNo++, position });
    else if (kind === '-') cur.lines.push({ kind, text, oldNo: oldNo++, newNo: null, position });
    else if (kind === '\\') cur.lines.push({ kind, text, oldNo: null, newNo: null, position });
    else if (kind === ' ' || text === '') {
      // A context line (an empty one may have lost its leading space).
      if (text === '' && oldNo >= cur.oldStart + cur.oldLines && newNo >= cur.newStart + cur.newLines) continue;
      cur.lines.push({ kind: ' ', text, oldNo: oldNo++, newNo: newNo++, position });
    }
  }
  return hunks;
}

// The hunk and line of `line` on `side` ('RIGHT': added and context lines by their new line
// number; 'LEFT': removed and context lines by their old line number), or null.
export function findLine(hunks, side, line) {
  for (const hunk of hunks) {
    for (const l of hunk.lines) {
      if (side === 'RIGHT' && (l.kind === '+' || l.kind === ' ') && l.newNo === line) return { hunk, line: l };
      if (side === 'LEFT' && (l.kind === '-' || l.kind === ' ') && l.oldNo === line) return { hunk, line: l };
    }
  }
  return null;
}

export function findPosition(hunks, position) {
  for (const hunk of hunks) {
    for (const l of hunk.lines) {
      if (l.position === position && l.kind !== '\\') return { hunk, line: l };
    }
  }
  return null;
}

// GitHub's diff_hunk of a review comment: the hunk header through the commented line.
export function diffHunk(hunk, upTo) {
  const lines = [hunk.header];
  for (const l of hunk.lines) {
    lines.push(l.text);
    if (l === upTo) break;
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------
// Line diff (longest common subsequence) and hunks with 3 lines of context.

function splitLines(text) {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// -> {patch, additions, deletions}; patch is undefined when the diff is too large to compute
// here (GitHub omits `patch` for large diffs too) or the content is binary.
export function makePatch(oldText, newText, context = 3) {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  if (oldText.includes('\0') || newText.includes('\0')) return { patch: undefined, additions: 0, deletions: 0 };
  const n = a.length;
  const m = b.length;
  if ((n + 1) * (m + 1) > 4_000_000) {
    return { patch: undefined, additions: m, deletions: n };
  }
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * w + j] = a[i] === b[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  const ops = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ k: ' ', i: i++, j: j++ });
    else if (j < m && (i >= n || lcs[i * w + j + 1] >= lcs[(i + 1) * w + j])) ops.push({ k: '+', i, j: j++ });
    else ops.push({ k: '-', i: i++, j });
  }
  const additions = ops.filter((o) => o.k === '+').length;
  const deletions = ops.filter((o) => o.k === '-').length;
  if (additions + deletions === 0) return { patch: undefined, additions, deletions };
  // Group changes into hunks.
  const changed = ops.map((o, x) => (o.k !== ' ' ? x : -1)).filter((x) => x >= 0);
  const groups = [];
  for (const x of changed) {
    const g = groups[groups.length - 1];
    if (g && x - g.end <= 2 * context + 1) g.end = x;
    else groups.push({ start: x, end: x });
  }
  const out = [];
  for (const g of groups) {
    const from = Math.max(0, g.start - context);
    const to = Math.min(ops.length - 1, g.end + context);
    const slice = ops.slice(from, to + 1);
    const oldLen = slice.filter((o) => o.k !== '+').length;
    const newLen = slice.filter((o) => o.k !== '-').length;
    const first = slice[0];
    const oldStart = oldLen === 0 ? first.i : first.i + 1;
    const newStart = newLen === 0 ? first.j : first.j + 1;
    const range = (s, l) => (l === 1 ? `${s}` : `${s},${l}`);
    out.push(`@@ -${range(oldStart, oldLen)} +${range(newStart, newLen)} @@`);
    for (const o of slice) out.push(o.k === '+' ? '+' + b[o.j] : o.k === '-' ? '-' + a[o.i] : ' ' + a[o.i]);
  }
  return { patch: out.join('\n'), additions, deletions };
}
