// Webhook event payloads (what a workflow reads from GITHUB_EVENT_PATH) built from the
// emulator's state, on the shape of the community examples in @octokit/webhooks-examples:
// the example gives the fields the emulator does not model, the state gives every object it does.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { HttpError } from './common.mjs';

const require = createRequire(import.meta.url);
let examples = null;

function example(name, action) {
  if (!examples) examples = JSON.parse(readFileSync(require.resolve('@octokit/webhooks-examples'), 'utf8'));
  const ev = examples.find((x) => x.name === name);
  const ex = ev?.examples.find((x) => x.action === action) || ev?.examples[0];
  if (!ex) throw new HttpError(400, { error: `no example payload for event ${name}` });
  return structuredClone(ex);
}

const merge = (ex, ours) => (ex && typeof ex === 'object' ? { ...ex, ...ours } : ours);

function bad(msg) {
  throw new HttpError(400, { error: msg });
}

// q: {name: issue_comment|pull_request|pull_request_target, action, repo, number, comment_id, sender}
export function webhookEvent(emu, q) {
  const repo = emu.repos.get(String(q.repo || '').toLowerCase());
  if (!repo) bad(`unknown repo ${q.repo}`);
  const action = q.action || (q.name === 'issue_comment' ? 'created' : 'opened');
  const payload = example(q.name === 'pull_request_target' ? 'pull_request' : q.name, action);
  delete payload.installation;
  delete payload.enterprise;
  payload.action = action;
  payload.repository = merge(payload.repository, emu.repoObj(repo));
  const owner = emu.users.get(repo.owner.toLowerCase());
  if (owner.type === 'Organization') {
    payload.organization = merge(payload.organization, {
      login: owner.login,
      id: owner.id,
      node_id: emu.userObj(owner.login).node_id,
      url: `${emu.base}/orgs/${owner.login}`,
    });
  } else delete payload.organization;

  if (q.name === 'issue_comment') {
    const id = Number(q.comment_id);
    const c = emu.issueComments.get(id);
    if (!c || c.repo !== repo.key) bad(`unknown comment ${q.comment_id} in ${repo.full_name}`);
    payload.issue = merge(payload.issue, emu.issueObj(emu.issues.get(`${repo.key}#${c.number}`)));
    payload.comment = merge(payload.comment, emu.issueCommentObj(c));
    payload.sender = emu.userObj(q.sender || c.user);
    if (action !== 'edited') delete payload.changes;
    return payload;
  }
  if (q.name === 'pull_request' || q.name === 'pull_request_target') {
    const pr = emu.pulls.get(`${repo.key}#${Number(q.number)}`);
    if (!pr) bad(`unknown pull request ${repo.full_name}#${q.number}`);
    payload.number = Number(q.number);
    payload.pull_request = merge(payload.pull_request, emu.pullObj(pr));
    payload.sender = emu.userObj(q.sender || emu.issues.get(pr.key).user);
    if (action === 'synchronize') {
      payload.after = pr.head.sha;
      payload.before = q.before || payload.before;
    } else {
      delete payload.before;
      delete payload.after;
    }
    if (action !== 'edited') delete payload.changes;
    return payload;
  }
  bad('name must be issue_comment, pull_request or pull_request_target');
}
