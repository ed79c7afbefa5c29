//! One request and its response on the Rust relay: the request hook, the upstream
//! request, the body's reads through the guard or past the side copy, the end hook.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tokio::sync::{mpsc, oneshot, watch};

use super::body::{read_error_name, request_error_name, Abort, Decoder, Piece, RelayBody};
use super::tls::tls_failure;
use super::Shared;
use crate::framing::Head;
use crate::guard::{Blocked, CallCheck, Outcome, Step};
use crate::providers::{Dialect, ToolUse, HEAD_BYTES};
use crate::python::assemble::{FeedError, PyAssembler};
use crate::python::guard::{run_check, PyGuard};
use crate::python::registry::both_facts;

type Headers = Vec<(Vec<u8>, Vec<u8>)>;

const HEALTH_PATH: &str = "/toolstitch/health";

/// The guard's check, run with the GIL once per call.
struct AttachedCheck<'a> {
    check: &'a Py<PyAny>,
}

impl CallCheck for AttachedCheck<'_> {
    fn check(&mut self, call: &ToolUse) -> Result<(), String> {
        Python::attach(|py| run_check(py, self.check.bind(py), call))
    }
}

fn response(status: u16, headers: &Headers, body: RelayBody) -> Response<RelayBody> {
    let mut out = Response::new(body);
    *out.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let map = out.headers_mut();
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k), HeaderValue::from_bytes(v)) {
            map.append(k, v);
        }
    }
    out
}

fn whole(status: u16, headers: &Headers, body: Vec<u8>) -> Response<RelayBody> {
    response(status, headers, RelayBody::Whole(Some(Bytes::from(body))))
}

fn server_error() -> Response<RelayBody> {
    let headers = vec![(b"content-type".to_vec(), b"text/plain".to_vec())];
    whole(500, &headers, b"Internal Server Error".to_vec())
}

/// Python's `(status, headers, body)` of a whole response.
fn whole_from_py(answer: &Bound<'_, PyAny>) -> PyResult<Response<RelayBody>> {
    let (status, headers, body): (u16, Headers, Vec<u8>) = answer.extract()?;
    Ok(whole(status, &headers, body))
}

fn report(py: Python<'_>, e: &PyErr) {
    e.print(py);
}

/// Answers one request.
pub(crate) async fn respond(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Response<RelayBody> {
    let (parts, body) = request.into_parts();
    if parts.uri.path() == HEALTH_PATH && parts.method == hyper::Method::GET {
        let draining = shared.draining.load(Ordering::SeqCst);
        let open = shared.open.load(Ordering::SeqCst);
        return Python::attach(|py| {
            let answer = shared.health.bind(py).call1((draining, open))?;
            let (status, body): (u16, Vec<u8>) = answer.extract()?;
            let headers = vec![
                (b"content-type".to_vec(), b"application/json".to_vec()),
                (
                    b"content-length".to_vec(),
                    body.len().to_string().into_bytes(),
                ),
            ];
            Ok::<_, PyErr>(whole(status, &headers, body))
        })
        .unwrap_or_else(|e| {
            Python::attach(|py| report(py, &e));
            server_error()
        });
    }
    let open = Open::new(&shared);
    let Ok(collected) = body.collect().await else {
        // The client went away before its request was complete.
        return whole(400, &Vec::new(), Vec::new());
    };
    let body = collected.to_bytes();
    let headers: Headers = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    let method = parts.method.clone();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let hooked = Python::attach(|py| {
        let answer = shared.request.bind(py).call1((
            method.as_str(),
            PyBytes::new(py, path.as_bytes()),
            PyBytes::new(py, query.as_bytes()),
            headers,
            PyBytes::new(py, &body),
        ))?;
        let (exchange, url, forwarded): (Py<PyAny>, String, Headers) = answer.extract()?;
        Ok::<_, PyErr>((exchange, url, forwarded))
    });
    let (exchange, url, forwarded) = match hooked {
        Ok(hooked) => hooked,
        Err(e) => {
            Python::attach(|py| report(py, &e));
            return server_error();
        }
    };
    let (respond, responded) = oneshot::channel();
    let relay = Relay {
        shared,
        exchange,
        down: Down::Pending(Some(respond)),
        facts: Facts::default(),
        _open: open,
    };
    tokio::spawn(relay.run(method, url, forwarded, body));
    responded
        .await
        .unwrap_or_else(|_| whole(499, &Vec::new(), Vec::new()))
}

/// Counts an open exchange while it lives.
struct Open(Arc<Shared>);

impl Open {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.open.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(shared))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let _ = self
            .0
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// Where the client's response stands.
enum Down {
    /// Not started: the head goes through the service's answer.
    Pending(Option<oneshot::Sender<Response<RelayBody>>>),
    /// Started: the body's pieces.
    Started(mpsc::Sender<Piece>),
    /// Ended, or the client is gone.
    Done,
}

impl Down {
    /// Sends the head (and, for a streamed response, keeps the body's sender).
    fn start(&mut self, status: u16, headers: &Headers) -> bool {
        let Down::Pending(slot) = self else {
            return false;
        };
        let Some(respond) = slot.take() else {
            return false;
        };
        let (tx, rx) = mpsc::channel(4);
        let ok = respond
            .send(response(status, headers, RelayBody::Stream(rx)))
            .is_ok();
        *self = if ok { Down::Started(tx) } else { Down::Done };
        ok
    }

    fn whole(&mut self, answer: Response<RelayBody>) -> bool {
        let ok = match self {
            Down::Pending(slot) => slot.take().is_some_and(|r| r.send(answer).is_ok()),
            _ => false,
        };
        *self = Down::Done;
        ok
    }

    async fn send(&mut self, data: Bytes) -> bool {
        match self {
            Down::Started(tx) => {
                if tx.send(Ok(data)).await.is_ok() {
                    return true;
                }
                *self = Down::Done;
                false
            }
            _ => false,
        }
    }

    /// Ends the body whole.
    fn end(&mut self) {
        *self = Down::Done;
    }

    /// Leaves the body unfinished: the connection is dropped.
    async fn abort(&mut self) {
        if let Down::Started(tx) = self {
            let _ = tx.send(Err(Abort)).await;
        }
        *self = Down::Done;
    }

    fn started(&self) -> bool {
        !matches!(self, Down::Pending(_))
    }

    /// Resolves when the client is gone.
    async fn closed(&mut self) {
        match self {
            Down::Pending(Some(r)) => r.closed().await,
            Down::Started(tx) => tx.closed().await,
            _ => std::future::pending::<()>().await,
        }
    }
}

/// What the end hook is told.
#[derive(Default)]
struct Facts {
    bytes: u64,
    reads: u64,
    /// When the response started going out.
    began: Option<Instant>,
    chunks: Option<Vec<f64>>,
    read_error: Option<String>,
    copy_error: Option<String>,
    copy_failure: Option<FeedError>,
    client_disconnected: bool,
    cut: bool,
    /// The body's first bytes, for the end hook's id and model: its first
    /// event alone when that says both (all the hook reads of it).
    head: Head,
    failed_answered: bool,
}

/// The ways a read loop ends.
enum Stop {
    Ended,
    Blocked,
    Cut,
    Gone,
    Failed(&'static str),
}

struct Relay {
    shared: Arc<Shared>,
    exchange: Py<PyAny>,
    down: Down,
    facts: Facts,
    _open: Open,
}

impl Relay {
    /// Keeps the head of the body whose dialect `dialect` tells once known.
    fn keep_head(&mut self, data: &[u8], dialect: impl FnOnce() -> Option<Dialect>) {
        self.facts.head.keep(data, HEAD_BYTES, |first| {
            dialect().map(|d| both_facts(d, first).is_some())
        });
    }

    fn mark_start(&mut self) {
        if self.facts.began.is_none() {
            self.facts.began = Some(Instant::now());
        }
    }

    fn start(&mut self, status: u16, headers: &Headers) -> bool {
        self.mark_start();
        self.down.start(status, headers)
    }

    fn answer_whole(&mut self, answer: Response<RelayBody>) {
        self.mark_start();
        self.down.whole(answer);
    }

    async fn run(mut self, method: hyper::Method, url: String, headers: Headers, body: Bytes) {
        let issued = Instant::now();
        match self.upstream(&method, &url, &headers, body).await {
            Ok(upstream) => self.relay(upstream, issued).await,
            Err((name, tls)) => {
                let answer = Python::attach(|py| {
                    let answer = self
                        .exchange
                        .bind(py)
                        .call_method1("unreachable", (name, tls))?;
                    whole_from_py(&answer)
                });
                match answer {
                    Ok(answer) => self.answer_whole(answer),
                    Err(e) => Python::attach(|py| report(py, &e)),
                }
            }
        }
        // The end hook (Python: the record, the span, the log line) runs on a thread of
        // the blocking pool: a hook that blocks (a log whose reader stopped) holds up
        // no worker, and so no connection.
        let _ = tokio::task::spawn_blocking(move || self.end()).await;
    }

    /// The upstream's response head; a connection that could not be made is tried
    /// once more (no byte of the request went out). The error: its name as httpx
    /// spells it, and what a failed TLS handshake said.
    async fn upstream(
        &self,
        method: &hyper::Method,
        url: &str,
        headers: &Headers,
        body: Bytes,
    ) -> Result<Response<Incoming>, (&'static str, Option<String>)> {
        let uri: hyper::Uri = url.parse().map_err(|_| ("InvalidURL", None))?;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut request = Request::new(Full::new(body.clone()));
            *request.method_mut() = method.clone();
            *request.uri_mut() = uri.clone();
            let map = request.headers_mut();
            for (k, v) in headers {
                if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k), HeaderValue::from_bytes(v)) {
                    map.append(k, v);
                }
            }
            let wait = self.shared.upstream_timeout + Duration::from_secs(30);
            match tokio::time::timeout(wait, self.shared.client.request(request)).await {
                Err(_) => return Err(("ReadTimeout", None)),
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(e)) if e.is_connect() && tries < 2 => continue,
                Ok(Err(e)) => return Err((request_error_name(&e), tls_failure(&e))),
            }
        }
    }

    async fn relay(&mut self, upstream: Response<Incoming>, issued: Instant) {
        let status = upstream.status().as_u16();
        let raw: Headers = upstream
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        let plan = Python::attach(|py| {
            let plan = self
                .exchange
                .bind(py)
                .call_method1("respond", (status, raw))?;
            let plan = plan.cast_into::<PyTuple>()?;
            let mode: String = plan.get_item(0)?.extract()?;
            let headers: Headers = plan.get_item(1)?.extract()?;
            let target = plan.get_item(2)?;
            let decode: Option<String> = plan.get_item(3)?.extract()?;
            let timed: bool = plan.get_item(4)?.extract()?;
            let path = match mode.as_str() {
                "guard" => Path::Guard(target.cast_into::<PyGuard>()?.unbind()),
                "pass" => Path::Pass(match target.is_none() {
                    true => None,
                    false => Some(target.cast_into::<PyAssembler>()?.unbind()),
                }),
                _ => Path::Whole(whole_from_py(&target)?),
            };
            Ok::<_, PyErr>((path, headers, decode, timed))
        });
        let (path, headers, decode, timed) = match plan {
            Ok(plan) => plan,
            Err(e) => {
                Python::attach(|py| report(py, &e));
                self.answer_whole(server_error());
                return;
            }
        };
        if timed {
            self.facts.chunks = Some(Vec::new());
        }
        let mut body = upstream.into_body();
        match path {
            Path::Whole(answer) => self.answer_whole(answer),
            Path::Guard(guard) => {
                self.guarded(&mut body, guard.get(), status, &headers, issued)
                    .await;
            }
            Path::Pass(asm) => {
                let mut decoder = decode.as_deref().and_then(Decoder::new);
                if !self.start(status, &headers) {
                    self.facts.client_disconnected = true;
                    return;
                }
                let asm = asm.as_ref().map(|a| a.get());
                match self
                    .read(&mut body, issued, |relay, data| {
                        relay.copy(asm, decoder.as_mut(), data)
                    })
                    .await
                {
                    Stop::Ended => {
                        if let (Some(asm), Some(decoder)) = (asm, decoder.as_mut()) {
                            if self.facts.read_error.is_none() && self.facts.copy_error.is_none() {
                                let rest = decoder.flush();
                                let _ = asm.feed_detached(&rest);
                            }
                        }
                        self.down.end();
                    }
                    Stop::Cut => {
                        self.facts.cut = true;
                        self.down.abort().await;
                    }
                    Stop::Failed(name) => {
                        self.facts.read_error =
                            Some(format!("the upstream response failed: {name}"));
                        self.down.abort().await;
                    }
                    Stop::Gone => {
                        self.facts.client_disconnected = true;
                        self.down.end();
                    }
                    Stop::Blocked => self.down.end(),
                }
            }
        }
    }

    /// The side copy of one read (never changes what is forwarded).
    fn copy(&mut self, asm: Option<&PyAssembler>, decoder: Option<&mut Decoder>, data: &[u8]) {
        let Some(asm) = asm else { return };
        if self.facts.copy_error.is_some() || self.facts.copy_failure.is_some() || data.is_empty() {
            return;
        }
        let decoded;
        let data = match decoder {
            Some(d) => match d.decode(data) {
                Ok(out) => {
                    decoded = out;
                    decoded.as_slice()
                }
                Err(why) => {
                    self.facts.copy_error = Some(why);
                    return;
                }
            },
            None => data,
        };
        if let Err(e) = asm.feed_detached(data) {
            self.facts.copy_failure = Some(e);
        }
        if self.facts.head.open(HEAD_BYTES) {
            self.keep_head(data, || asm.dialect_detached());
        }
    }

    /// The body's next read: the upstream's next frame with data, or why the read
    /// loop stops (the drain's cut, the upstream's end, timeout or failure, the
    /// client gone). Counts the read in the facts.
    async fn next_read(
        &mut self,
        body: &mut Incoming,
        cut: &mut watch::Receiver<bool>,
        issued: Instant,
    ) -> Result<Bytes, Stop> {
        let timeout = self.shared.upstream_timeout;
        loop {
            let frame = tokio::select! {
                biased;
                _ = cut.wait_for(|c| *c) => return Err(Stop::Cut),
                // What the upstream already sent comes before a client that left: a
                // client that read the last event may close before the body's end.
                frame = tokio::time::timeout(timeout, body.frame()) => frame,
                () = self.down.closed() => return Err(Stop::Gone),
            };
            let data = match frame {
                Err(_) => return Err(Stop::Failed("ReadTimeout")),
                Ok(None) => return Err(Stop::Ended),
                Ok(Some(Err(e))) => return Err(Stop::Failed(read_error_name(&e))),
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            if let Some(chunks) = self.facts.chunks.as_mut() {
                chunks.push(issued.elapsed().as_secs_f64());
            }
            self.facts.bytes += data.len() as u64;
            self.facts.reads += 1;
            return Ok(data);
        }
    }

    /// Reads the body until it ends, the client goes, the drain time is over or
    /// the upstream fails; `each` handles a read after it went out (pass-through).
    async fn read(
        &mut self,
        body: &mut Incoming,
        issued: Instant,
        mut each: impl FnMut(&mut Self, &[u8]),
    ) -> Stop {
        let mut cut = self.shared.cut.subscribe();
        loop {
            let data = match self.next_read(body, &mut cut, issued).await {
                Ok(data) => data,
                Err(stop) => return stop,
            };
            if !self.down.send(data.clone()).await {
                return Stop::Gone;
            }
            each(self, &data);
        }
    }

    async fn guarded(
        &mut self,
        body: &mut Incoming,
        guard: &PyGuard,
        status: u16,
        headers: &Headers,
        issued: Instant,
    ) {
        let check = guard.check();
        let mut cut = self.shared.cut.subscribe();
        // One step for every read: its buffer is reused.
        let mut step = Step::default();
        let stop = loop {
            let data = match self.next_read(body, &mut cut, issued).await {
                Ok(data) => data,
                Err(stop) => break stop,
            };
            let fed = guard.feed_detached(&data, &mut AttachedCheck { check }, &mut step);
            let step = fed.then_some(&mut step);
            match self
                .forward(guard, step, status, headers, Some(&data))
                .await
            {
                Forwarded::Going => {}
                Forwarded::Blocked => break Stop::Blocked,
                Forwarded::Gone => break Stop::Gone,
            }
        };
        match stop {
            Stop::Ended => self.guarded_end(guard, status, headers).await,
            Stop::Cut => {
                self.facts.cut = true;
                if guard.outcome_detached() == Some(Outcome::Open) {
                    self.guarded_end(guard, status, headers).await;
                }
                self.down.end();
            }
            Stop::Gone => {
                self.facts.client_disconnected = true;
                self.down.end();
            }
            Stop::Blocked => self.down.end(),
            Stop::Failed(name) => {
                let why = format!("the upstream response failed: {name}");
                self.facts.read_error = Some(why.clone());
                if self.down.started() {
                    // Nothing the guard held goes out; the client's response is left
                    // unfinished.
                    self.down.abort().await;
                    return;
                }
                let answer = Python::attach(|py| {
                    let answer = self.exchange.bind(py).call_method1("failed", (why,))?;
                    whole_from_py(&answer)
                });
                self.facts.failed_answered = true;
                match answer {
                    Ok(answer) => self.answer_whole(answer),
                    Err(e) => Python::attach(|py| report(py, &e)),
                }
            }
        }
    }

    async fn guarded_end(&mut self, guard: &PyGuard, status: u16, headers: &Headers) {
        let check = guard.check();
        let mut step = guard.finish_detached(&mut AttachedCheck { check });
        if let Forwarded::Going = self
            .forward(guard, step.as_mut(), status, headers, None)
            .await
        {
            if !self.down.started() {
                self.start(status, headers);
            }
            self.down.end();
        }
    }

    /// Sends what the guard released; `read`: the read it was fed, sent itself (no
    /// copy) when the guard released exactly its bytes (`Step::whole_read`), as it
    /// does for a read of whole events that pass. Other bytes are moved out of the step (no copy:
    /// the guard's next read fills a new buffer).
    async fn forward(
        &mut self,
        guard: &PyGuard,
        step: Option<&mut Step>,
        status: u16,
        headers: &Headers,
        read: Option<&Bytes>,
    ) -> Forwarded {
        let Some(step) = step else {
            return Forwarded::Gone;
        };
        if !step.forward.is_empty() {
            if !self.down.started() && !self.start(status, headers) {
                return Forwarded::Gone;
            }
            if self.facts.head.open(HEAD_BYTES) {
                self.keep_head(&step.forward, || guard.dialect_detached());
            }
            let out = match read {
                Some(read) if step.whole_read => read.clone(),
                _ => Bytes::from(std::mem::take(&mut step.forward)),
            };
            if !self.down.send(out).await {
                return Forwarded::Gone;
            }
        }
        match step.blocked.take() {
            None => Forwarded::Going,
            Some(blocked) => {
                self.end_blocked(&blocked).await;
                Forwarded::Blocked
            }
        }
    }

    async fn end_blocked(&mut self, blocked: &Blocked) {
        if !self.down.started() {
            let mut headers: Headers = blocked
                .headers
                .iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect();
            headers.push((
                b"content-length".to_vec(),
                blocked.body.len().to_string().into_bytes(),
            ));
            self.answer_whole(whole(blocked.status, &headers, blocked.body.clone()));
            return;
        }
        self.down.send(Bytes::from(blocked.tail.clone())).await;
        self.down.end();
    }

    /// The end hook: the facts, once.
    fn end(&mut self) {
        let facts = std::mem::take(&mut self.facts);
        let done = Python::attach(|py| {
            let chunks = match &facts.chunks {
                Some(c) => Some(PyList::new(py, c)?),
                None => None,
            };
            let failure = facts.copy_failure.map(|e| e.into_py(py).into_value(py));
            self.exchange.bind(py).call_method1(
                "end",
                (
                    facts.bytes,
                    facts.reads,
                    facts.began.map(|b| b.elapsed().as_secs_f64()),
                    chunks,
                    facts.read_error,
                    facts.copy_error,
                    failure,
                    facts.client_disconnected,
                    facts.cut,
                    PyBytes::new(py, facts.head.bytes()),
                    facts.failed_answered,
                ),
            )?;
            Ok::<_, PyErr>(())
        });
        if let Err(e) = done {
            Python::attach(|py| report(py, &e));
        }
    }
}

enum Path {
    Guard(Py<PyGuard>),
    Pass(Option<Py<PyAssembler>>),
    Whole(Response<RelayBody>),
}

enum Forwarded {
    Going,
    Blocked,
    Gone,
}
