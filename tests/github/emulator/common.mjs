// What the emulator's modules share: GitHub's limits and constants, the error a handler
// throws for an HTTP answer, and small helpers.

export const HTML = 'https://github.com';
export const SEED_TIME = Date.parse('2024-01-02T03:04:05Z');
export const MAX_COMMENT = 65536;
export const MAX_PR_FILES = 3000;
export const REACTIONS = ['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'rocket', 'eyes'];
export const KNOWN_BOT_IDS = { 'github-actions[bot]': 41898282, 'dependabot[bot]': 49699333 };
export const ROLE_PERMISSION = { admin: 'admin', maintain: 'write', write: 'write', triage: 'read', read: 'read', none: 'none' };

export class HttpError extends Error {
  constructor(status, body, headers) {
    super(body?.message || String(status));
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
export const lc = (s) => String(s).toLowerCase();
export const nodeId = (prefix, id) => `${prefix}_${Buffer.from(`emu:${id}`).toString('base64url')}`;
export const encPath = (p) => p.split('/').map(encodeURIComponent).join('/');
export const isSha = (s) => typeof s === 'string' && /^[0-9a-f]{40}$/.test(s);
export const chars = (s) => [...s].length;

export function seedError(msg) {
  throw new HttpError(400, { error: `bad seed: ${msg}` });
}
