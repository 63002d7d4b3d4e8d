//! The REST calls the bot makes, through octocrab, with what a busy real
//! repository needs: bounded retries with backoff on 5xx, timeouts and
//! transport errors; rate limits (403/429 with `retry-after` or
//! `x-ratelimit-reset`) honoured; pagination by page number on relative
//! paths (octocrab only sends the token to its base URI); a token that never
//! prints.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, Method, StatusCode};
use octocrab::Octocrab;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// An API token. It is handed to octocrab once and never formatted.
pub struct Token(String);

impl Token {
    pub fn new(token: String) -> Token {
        Token(token)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Token(***)")
    }
}

/// How long and how often to retry.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    pub attempts: u32,
    /// The first backoff after a 5xx or a transport error; doubled each time.
    pub first_backoff: Duration,
    /// A rate limit that lasts longer than this fails the run instead of waiting.
    pub longest_wait: Duration,
    /// Per request, connection to last byte.
    pub timeout: Duration,
}

impl RetryPolicy {
    /// The defaults, with the per-request timeout from
    /// `DISTRIBUTE_GITHUB_TIMEOUT_SECONDS` when set (for slow GitHub Enterprise servers).
    pub fn from_environment() -> anyhow::Result<RetryPolicy> {
        let mut policy = RetryPolicy::default();
        if let Ok(text) = std::env::var("DISTRIBUTE_GITHUB_TIMEOUT_SECONDS") {
            let seconds: f64 = text
                .trim()
                .parse()
                .ok()
                .filter(|seconds: &f64| *seconds > 0.0 && seconds.is_finite())
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "DISTRIBUTE_GITHUB_TIMEOUT_SECONDS={text:?}: expected a positive number of seconds"
                    )
                })?;
            policy.timeout = Duration::from_secs_f64(seconds);
        }
        Ok(policy)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            first_backoff: Duration::from_secs(1),
            longest_wait: Duration::from_secs(90),
            timeout: Duration::from_secs(30),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{method} {path}: HTTP {status}: {message}")]
    Status {
        method: Method,
        path: String,
        status: StatusCode,
        message: String,
    },
    #[error("{method} {path}: {message}")]
    Transport {
        method: Method,
        path: String,
        message: String,
    },
    #[error(
        "{method} {path}: rate limited for {seconds} s more, longer than this run waits; run it again later"
    )]
    RateLimited {
        method: Method,
        path: String,
        seconds: u64,
    },
    #[error("{method} {path}: unexpected response: {message}")]
    Decode {
        method: Method,
        path: String,
        message: String,
    },
}

impl ApiError {
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A refusal to write: the token is read-only (a pull request from a
    /// fork) or lacks a permission. Rate limits are not refusals.
    pub fn is_forbidden(&self) -> bool {
        self.status() == Some(StatusCode::FORBIDDEN)
    }
}

/// A response, read whole.
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

pub struct GitHubClient {
    octocrab: Octocrab,
    retry: RetryPolicy,
}

impl GitHubClient {
    pub fn new(api_url: &str, token: Token, retry: RetryPolicy) -> anyhow::Result<GitHubClient> {
        let octocrab = Octocrab::builder()
            .base_uri(api_url.trim_end_matches('/'))
            .map_err(|error| anyhow::anyhow!("GITHUB_API_URL {api_url:?}: {error}"))?
            .personal_token(token.0)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(retry.timeout))
            .set_write_timeout(Some(retry.timeout))
            .build()
            .map_err(|error| anyhow::anyhow!("building the GitHub client: {error}"))?;
        Ok(GitHubClient { octocrab, retry })
    }

    /// Sends a request, retrying what is worth retrying. A 4xx other than a
    /// rate limit comes back as `ApiError::Status`.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Response, ApiError> {
        let mut backoff = self.retry.first_backoff;
        for attempt in 1..=self.retry.attempts {
            let last = attempt == self.retry.attempts;
            let wait = match self.send_once(&method, path, body).await {
                Err(message) if !last => {
                    eprintln!(
                        "distribute: {method} {path}: {message}; retrying in {} s (attempt {attempt} of {})",
                        backoff.as_secs_f32(),
                        self.retry.attempts
                    );
                    backoff
                }
                Err(message) => {
                    return Err(ApiError::Transport {
                        method,
                        path: path.to_string(),
                        message,
                    });
                }
                Ok(response) => {
                    if response.status.is_success() || response.status.is_redirection() {
                        return Ok(response);
                    }
                    let retry = match rate_limit_wait(&response) {
                        Some(wait) if wait > self.retry.longest_wait => {
                            return Err(ApiError::RateLimited {
                                method,
                                path: path.to_string(),
                                seconds: wait.as_secs(),
                            });
                        }
                        Some(wait) => Some(("rate limited", wait)),
                        None if response.status.is_server_error() => {
                            Some(("server error", backoff))
                        }
                        None => None,
                    };
                    match retry {
                        Some((why, wait)) if !last => {
                            eprintln!(
                                "distribute: {method} {path}: HTTP {} ({why}); retrying in {} s (attempt {attempt} of {})",
                                response.status.as_u16(),
                                wait.as_secs_f32(),
                                self.retry.attempts
                            );
                            wait
                        }
                        _ => {
                            return Err(ApiError::Status {
                                method,
                                path: path.to_string(),
                                status: response.status,
                                message: error_message(&response.body),
                            });
                        }
                    }
                }
            };
            tokio::time::sleep(wait).await;
            backoff *= 2;
        }
        unreachable!("the last attempt returns")
    }

    async fn send_once(
        &self,
        method: &Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Response, String> {
        let request = async {
            let response = match *method {
                Method::GET => self.octocrab._get(path).await,
                Method::POST => self.octocrab._post(path, body).await,
                Method::PATCH => self.octocrab._patch(path, body).await,
                Method::PUT => self.octocrab._put(path, body).await,
                Method::DELETE => self.octocrab._delete(path, body).await,
                _ => unreachable!("the bot sends no other method"),
            }
            .map_err(|error| describe_octocrab_error(&error))?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = self
                .octocrab
                .body_to_string(response)
                .await
                .map_err(|error| describe_octocrab_error(&error))?;
            Ok(Response {
                status,
                headers,
                body,
            })
        };
        // octocrab's connect/read timeouts cover each phase; this bounds the whole.
        tokio::time::timeout(self.retry.timeout, request)
            .await
            .unwrap_or_else(|_| Err("timed out".to_string()))
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ApiError> {
        let response = self.send(Method::GET, path, None).await?;
        decode(Method::GET, path, &response.body)
    }

    /// `None` on 404.
    pub async fn get_optional<T: DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, ApiError> {
        match self.send(Method::GET, path, None).await {
            Ok(response) => decode(Method::GET, path, &response.body).map(Some),
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Every page of a list endpoint (100 per page, at most `max_pages`).
    pub async fn get_all<T: DeserializeOwned>(
        &self,
        path: &str,
        max_pages: u32,
    ) -> Result<Vec<T>, ApiError> {
        const PER_PAGE: usize = 100;
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut items = Vec::new();
        for page in 1..=max_pages {
            let page_path = format!("{path}{separator}per_page={PER_PAGE}&page={page}");
            let response = self.send(Method::GET, &page_path, None).await?;
            let batch: Vec<T> = decode(Method::GET, &page_path, &response.body)?;
            let count = batch.len();
            items.extend(batch);
            let link = response
                .headers
                .get(http::header::LINK)
                .and_then(|value| value.to_str().ok());
            let more = match link {
                Some(link) => link.contains("rel=\"next\""),
                None => count == PER_PAGE,
            };
            if !more || count == 0 {
                break;
            }
        }
        Ok(items)
    }

    pub async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ApiError> {
        let body = to_value(Method::POST, path, body)?;
        let response = self.send(Method::POST, path, Some(&body)).await?;
        decode(Method::POST, path, &response.body)
    }

    pub async fn patch<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ApiError> {
        let body = to_value(Method::PATCH, path, body)?;
        let response = self.send(Method::PATCH, path, Some(&body)).await?;
        decode(Method::PATCH, path, &response.body)
    }

    /// A DELETE; a resource already gone counts as deleted.
    pub async fn delete(&self, path: &str) -> Result<(), ApiError> {
        match self.send(Method::DELETE, path, None).await {
            Ok(_) => Ok(()),
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

fn to_value(
    method: Method,
    path: &str,
    body: &impl Serialize,
) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(body).map_err(|error| ApiError::Decode {
        method,
        path: path.to_string(),
        message: error.to_string(),
    })
}

fn decode<T: DeserializeOwned>(method: Method, path: &str, body: &str) -> Result<T, ApiError> {
    // 204 and friends carry no body; callers that expect nothing ask for `serde_json::Value`.
    let body = if body.trim().is_empty() { "null" } else { body };
    serde_json::from_str(body).map_err(|error| ApiError::Decode {
        method,
        path: path.to_string(),
        message: error.to_string(),
    })
}

/// GitHub's `message`, or the start of the body.
fn error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            let message = value.get("message")?.as_str()?.to_string();
            let details = value
                .get("errors")
                .map(|errors| format!(" ({errors})"))
                .unwrap_or_default();
            Some(format!("{message}{details}"))
        })
        .unwrap_or_else(|| body.chars().take(200).collect())
}

/// octocrab's errors carry no secrets (the authorization header is marked
/// sensitive and never part of a message); keep the cause chain short.
fn describe_octocrab_error(error: &octocrab::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// How long a rate-limited response asks to wait, if it is one: 429, or 403
/// with `retry-after`, `x-ratelimit-remaining: 0`, or a "rate limit" message
/// (GitHub's secondary limit, whose documented minimum wait is a minute).
fn rate_limit_wait(response: &Response) -> Option<Duration> {
    let status = response.status;
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::FORBIDDEN {
        return None;
    }
    let header = |name: &str| {
        response
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(seconds) = header("retry-after").and_then(|value| value.parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if header("x-ratelimit-remaining") == Some("0") {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let reset = header("x-ratelimit-reset")
            .and_then(|value| value.parse::<u64>().ok())
            .unwrap_or(now + 60);
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    let limited_message = error_message(&response.body)
        .to_lowercase()
        .contains("rate limit");
    if status == StatusCode::TOO_MANY_REQUESTS || limited_message {
        return Some(Duration::from_secs(60));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&'static str, &str)], body: &str) -> Response {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        Response {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: body.to_string(),
        }
    }

    #[test]
    fn rate_limits_are_told_apart_from_refusals() {
        assert_eq!(
            rate_limit_wait(&response(429, &[("retry-after", "3")], "")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            rate_limit_wait(&response(403, &[("retry-after", "2")], "")),
            Some(Duration::from_secs(2))
        );
        let soon = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 4;
        let wait = rate_limit_wait(&response(
            403,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", &soon.to_string()),
            ],
            r#"{"message":"API rate limit exceeded"}"#,
        ))
        .unwrap();
        assert!(wait >= Duration::from_secs(4) && wait <= Duration::from_secs(6));
        assert_eq!(
            rate_limit_wait(&response(
                403,
                &[("x-ratelimit-remaining", "4999")],
                r#"{"message":"Resource not accessible by integration"}"#
            )),
            None
        );
        assert_eq!(rate_limit_wait(&response(500, &[], "")), None);
    }

    #[test]
    fn the_token_never_prints() {
        let token = Token::new("ghs_secret".into());
        assert_eq!(format!("{token:?}"), "Token(***)");
    }

    #[test]
    fn error_messages_come_from_githubs_body() {
        assert_eq!(
            error_message(r#"{"message":"Validation Failed","errors":["x"]}"#),
            r#"Validation Failed (["x"])"#
        );
        assert_eq!(error_message("<html>bad gateway"), "<html>bad gateway");
    }
}
