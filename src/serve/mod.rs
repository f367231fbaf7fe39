//! `run --serve`: the live dashboard.
//!
//! A page served from the binary (no app to install, no CDN: the HTML, the
//! script and the style are compiled in) shows the four views with their
//! keypoints, the fitted body in 3D with the camera frusta, and the status
//! figures as live charts, each labelled measured or modelled.
//!
//! ```text
//! pipeline threads --try_send--> live tap --> hub thread (JPEG, JSON)
//!   --try_send per client--> fan-out --> one WebSocket task per browser (tokio)
//! ```
//!
//! | part | module | thread |
//! |---|---|---|
//! | the pipeline's side | [`crate::rig::stage::live`] | the pipeline's own |
//! | frames and results into messages | [`hub`] | `serve-hub` |
//! | bounded per-client queues | [`fanout`] | (the hub pushes) |
//! | the messages | [`messages`] | |
//! | HTTP and WebSocket (axum) | [`web`] | `serve-web`: a current-thread tokio runtime |
//!
//! No step waits for a browser: a slow one loses messages (counted), one
//! whose queue stays full is dropped (counted), and the pipeline's threads
//! only ever `try_send`. With no browser connected the tap passes nothing.

pub mod fanout;
pub mod hub;
pub mod messages;
pub mod web;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;

use crate::rig::stage::live::LiveTap;

use fanout::{Fanout, FanoutConfig};

/// Frames per second per camera the dashboard shows.
pub const VIEW_FPS: f64 = 4.0;

/// Kernel send buffer of each browser's connection. Left to autotuning, Linux
/// lets it grow to megabytes, seconds of the stream, before a browser that
/// stopped reading blocks a send; this (doubled by the kernel) is about half a
/// second of four views at 288x288, and well above a LAN's bandwidth-delay
/// product.
const SEND_BUFFER: usize = 128 * 1024;

/// How long stopping waits for the browsers' connections to close.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot serve the dashboard on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("dashboard: {what}: {source}")]
    Start {
        what: &'static str,
        source: std::io::Error,
    },
}

/// The running dashboard.
pub struct Server {
    address: SocketAddr,
    tap: LiveTap,
    fanout: Arc<Fanout<axum::extract::ws::Utf8Bytes>>,
    state: Arc<web::AppState>,
    stop_hub: Arc<AtomicBool>,
    hub: Option<JoinHandle<()>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    web: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `address` for a rig of `cameras` cameras and starts the
    /// hub and the web threads.
    ///
    /// # Errors
    /// [`ServeError::Bind`] naming the address; [`ServeError::Start`] when a
    /// thread or the runtime could not start.
    pub fn start(address: SocketAddr, cameras: usize) -> Result<Self, ServeError> {
        let listener = std::net::TcpListener::bind(address)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|source| ServeError::Bind { address, source })?;
        let address = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { address, source })?;
        let start = |what| move |source| ServeError::Start { what, source };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(start("the tokio runtime"))?;
        let (tap, items) = LiveTap::new(cameras, VIEW_FPS);
        tap.set_address(format!("http://{address}/"));
        let fanout = Arc::new(Fanout::new(FanoutConfig::default(), tap.consumers()));
        let state = Arc::new(web::AppState {
            tap: tap.clone(),
            fanout: Arc::clone(&fanout),
            open: AtomicUsize::new(0),
        });
        let stop_hub = Arc::new(AtomicBool::new(false));
        let hub = hub::Hub::new(
            items,
            tap.clone(),
            Arc::clone(&fanout),
            Arc::clone(&stop_hub),
        );
        let hub = std::thread::Builder::new()
            .name("serve-hub".into())
            .spawn(move || hub.run())
            .map_err(start("the hub thread"))?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = web::router(Arc::clone(&state));
        let web = std::thread::Builder::new()
            .name("serve-web".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            log::error!("dashboard on {address}: {e}");
                            return;
                        }
                    };
                    let listener = listener.tap_io(|tcp| {
                        if let Err(e) =
                            socket2::SockRef::from(&*tcp).set_send_buffer_size(SEND_BUFFER)
                        {
                            log::warn!("dashboard: a connection's send buffer: {e}");
                        }
                    });
                    let serve = axum::serve(
                        listener,
                        app.into_make_service_with_connect_info::<SocketAddr>(),
                    );
                    tokio::select! {
                        served = serve => if let Err(e) = served {
                            log::error!("dashboard on {address}: {e}");
                        },
                        _ = stopped => {}
                    }
                });
                // Connections still open are closed with the runtime.
                runtime.shutdown_timeout(Duration::from_millis(200));
            })
            .map_err(start("the web thread"))?;
        Ok(Self {
            address,
            tap,
            fanout,
            state,
            stop_hub,
            hub: Some(hub),
            shutdown: Some(shutdown),
            web: Some(web),
        })
    }

    /// The address it listens on (the port the system chose, for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The tap the run offers its frames, results and figures to.
    pub fn tap(&self) -> LiveTap {
        self.tap.clone()
    }

    /// Stops: every browser is told the stream ended (a WebSocket close), then
    /// the server goes.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop_hub.store(true, Ordering::Relaxed);
        if let Some(h) = self.hub.take() {
            let _ = h.join();
        }
        self.fanout.close();
        let t = Instant::now();
        while self.state.open.load(Ordering::Relaxed) > 0 && t.elapsed() < CLOSE_WAIT {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(w) = self.web.take() {
            let _ = w.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_now();
    }
}
