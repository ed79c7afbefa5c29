//! `_Relay`: `toolstitch proxy --relay rust`. The per-read path of the proxy (the
//! upstream's reads, the guard or the side copy, the client's writes) runs here on
//! tokio and hyper without the GIL; Python keeps the configuration and what runs once
//! per request and response (`toolstitch.proxy.relay`): a request hook that reads the
//! request, a head hook that picks the response's path (the guard, or the side copy)
//! and an end hook handed the facts, which writes the record, the span and the log
//! line (on a thread of tokio's blocking pool: it holds up no response's bytes). The
//! guard's check runs with the GIL once per call, as `_Guard`'s does.

mod body;
mod exchange;
mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::GracefulShutdown;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use tokio::sync::watch;

pub(crate) type Upstream = Client<tls::Connector, Full<Bytes>>;

/// What every exchange of one relay shares.
pub(crate) struct Shared {
    /// `request(method, raw_path, query, headers, body)`: the exchange (or `None`).
    request: Py<PyAny>,
    /// `health(draining, open)`: the health check's `(status, body)`.
    health: Py<PyAny>,
    client: Upstream,
    upstream_timeout: Duration,
    draining: AtomicBool,
    open: AtomicUsize,
    /// Set when a drain's time is over: open responses end.
    cut: watch::Sender<bool>,
    /// Set when a drain begins: no new connection is accepted.
    stop: watch::Sender<bool>,
    /// Set five seconds after the cut: the server stops, whatever is still open.
    backstop: watch::Sender<bool>,
}

/// The relay's server: started, waited for, drained.
#[pyclass(module = "toolstitch._toolstitch", name = "_Relay", frozen)]
pub struct PyRelay {
    shared: Arc<Shared>,
    listener: Mutex<Option<std::net::TcpListener>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    done: Arc<(Mutex<bool>, Condvar)>,
}

fn os_error(e: &std::io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, e.kind().to_string())),
        None => PyOSError::new_err(e.to_string()),
    }
}

fn listen(host: &str, port: u16) -> std::io::Result<std::net::TcpListener> {
    let ip: std::net::IpAddr = host
        .parse()
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an address"))?;
    let addr = SocketAddr::new(ip, port);
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[pymethods]
impl PyRelay {
    /// Listens on `host:port` (an address Python resolved and bound a moment before,
    /// so that an operator's mistake is said by Python); `request` and `health` are
    /// the hooks (see the module's doc); `https`: the upstream is an `https://` one
    /// (the trusted certificates are loaded: none found raises `ValueError`).
    #[new]
    #[pyo3(signature = (host, port, *, request, health, upstream_timeout, https = false))]
    fn new(
        host: &str,
        port: u16,
        request: Py<PyAny>,
        health: Py<PyAny>,
        upstream_timeout: f64,
        https: bool,
    ) -> PyResult<Self> {
        let timeout = Duration::try_from_secs_f64(upstream_timeout)
            .map_err(|e| PyRuntimeError::new_err(format!("upstream_timeout: {e}")))?;
        let connector = tls::connector(https, timeout.min(Duration::from_secs(30)))
            .map_err(PyValueError::new_err)?;
        let listener = listen(host, port).map_err(|e| os_error(&e))?;
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(100)
            .build(connector);
        Ok(Self {
            shared: Arc::new(Shared {
                request,
                health,
                client,
                upstream_timeout: timeout,
                draining: AtomicBool::new(false),
                open: AtomicUsize::new(0),
                cut: watch::Sender::new(false),
                stop: watch::Sender::new(false),
                backstop: watch::Sender::new(false),
            }),
            listener: Mutex::new(Some(listener)),
            runtime: Mutex::new(None),
            done: Arc::new((Mutex::new(false), Condvar::new())),
        })
    }

    /// The port it listens on.
    #[getter]
    fn port(&self) -> PyResult<u16> {
        let held = self.listener.lock().unwrap_or_else(PoisonError::into_inner);
        match held.as_ref().map(std::net::TcpListener::local_addr) {
            Some(Ok(addr)) => Ok(addr.port()),
            Some(Err(e)) => Err(os_error(&e)),
            None => Err(PyRuntimeError::new_err("the relay has started")),
        }
    }

    /// Responses open now.
    #[getter]
    fn open(&self) -> usize {
        self.shared.open.load(Ordering::Relaxed)
    }

    /// Starts serving (on threads of its own).
    fn start(&self) -> PyResult<()> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the relay has started"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("toolstitch-relay")
            .build()
            .map_err(|e| os_error(&e))?;
        let shared = Arc::clone(&self.shared);
        let done = Arc::clone(&self.done);
        runtime.spawn(async move {
            if let Err(e) = serve(shared, listener).await {
                eprintln!("toolstitch proxy: the relay stopped: {e}");
            }
            let (lock, ready) = &*done;
            *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            ready.notify_all();
        });
        *self.runtime.lock().unwrap_or_else(PoisonError::into_inner) = Some(runtime);
        Ok(())
    }

    /// Waits up to `timeout` seconds (without the GIL) for the server to stop:
    /// whether it has.
    fn wait(&self, py: Python<'_>, timeout: f64) -> bool {
        let done = Arc::clone(&self.done);
        let stopped = py.detach(move || {
            let (lock, ready) = &*done;
            let held = lock.lock().unwrap_or_else(PoisonError::into_inner);
            let wait = Duration::try_from_secs_f64(timeout).unwrap_or(Duration::ZERO);
            let (held, _) = ready
                .wait_timeout_while(held, wait, |stopped| !*stopped)
                .unwrap_or_else(PoisonError::into_inner);
            *held
        });
        if stopped {
            if let Some(runtime) = self
                .runtime
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                py.detach(move || runtime.shutdown_timeout(Duration::from_secs(1)));
            }
        }
        stopped
    }

    /// Stops: no new connection, the health check says draining, and responses
    /// still open after `seconds` are ended (each recorded as cut).
    fn drain(&self, seconds: f64) {
        let seconds = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
        if self.shared.draining.swap(true, Ordering::SeqCst) {
            return;
        }
        let handle = self
            .runtime
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|r| r.handle().clone());
        self.shared.stop.send_replace(true);
        if let Some(handle) = handle {
            let shared = Arc::clone(&self.shared);
            handle.spawn(async move {
                tokio::time::sleep(seconds).await;
                shared.cut.send_replace(true);
                tokio::time::sleep(Duration::from_secs(5)).await;
                shared.backstop.send_replace(true);
            });
        }
    }
}

async fn serve(shared: Arc<Shared>, listener: std::net::TcpListener) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let graceful = GracefulShutdown::new();
    let mut stop = shared.stop.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // Nagle's algorithm off: a stream forwarded in small writes would stall
                // for the client's delayed ACK.
                let _ = stream.set_nodelay(true);
                let shared = Arc::clone(&shared);
                let service = service_fn(move |request| {
                    let shared = Arc::clone(&shared);
                    async move {
                        Ok::<_, Infallible>(exchange::respond(shared, request).await)
                    }
                });
                let connection = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            _ = stop.wait_for(|stopped| *stopped) => break,
        }
    }
    drop(listener);
    let mut backstop = shared.backstop.subscribe();
    let drained = async {
        graceful.shutdown().await;
        // The exchanges' last step (the record) may still run after their
        // connection closed.
        while shared.open.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        () = drained => {}
        _ = backstop.wait_for(|over| *over) => {}
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRelay>()?;
    Ok(())
}
