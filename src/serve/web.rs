//! The HTTP side: the page and its script from the binary, and one WebSocket
//! per browser fed from the fan-out.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, StreamExt};

use crate::rig::stage::live::LiveTap;

use super::fanout::Fanout;
use super::messages::Hello;

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// Longest one message may take to leave: a connection that stalls longer
/// (the browser stopped reading) is closed and counted as dropped. It is
/// longer than a client's queue takes to fill and then stay full for the
/// fan-out's patience at the dashboard's message rate, so a stalled browser
/// is normally let go by the fan-out (losing messages first), and this only
/// bounds how long its connection lingers.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes tungstenite may hold for a client beyond what the socket takes.
const MAX_WRITE_BUFFER: usize = 1 << 20;

/// How often a new client looks whether the rig has started.
const RIG_POLL: Duration = Duration::from_millis(100);

/// What every request handler shares.
pub struct AppState {
    pub tap: LiveTap,
    pub fanout: Arc<Fanout<Utf8Bytes>>,
    /// WebSocket connections open now.
    pub open: AtomicUsize,
}

/// The routes: `/`, `/app.js`, `/style.css` and `/ws`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route(
            "/app.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    APP_JS,
                )
            }),
        )
        .route(
            "/style.css",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
                    STYLE_CSS,
                )
            }),
        )
        .route("/ws", get(upgrade))
        .with_state(state)
}

async fn upgrade(
    ws: WebSocketUpgrade,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    State(state): State<Arc<AppState>>,
) -> Response {
    ws.max_write_buffer_size(MAX_WRITE_BUFFER)
        .on_upgrade(move |socket| client(socket, peer, state))
        .into_response()
}

/// One browser: the hello, then what the fan-out gives it, until it leaves,
/// stalls or the server stops.
async fn client(socket: WebSocket, peer: SocketAddr, state: Arc<AppState>) {
    state.open.fetch_add(1, Ordering::Relaxed);
    let (mut tx, mut rx) = socket.split();
    // The rig describes itself once its cameras are open.
    let rig = loop {
        if let Some(rig) = state.tap.rig() {
            break rig;
        }
        tokio::select! {
            () = tokio::time::sleep(RIG_POLL) => {}
            incoming = rx.next() => if !matches!(incoming, Some(Ok(m)) if !matches!(m, Message::Close(_))) {
                state.open.fetch_sub(1, Ordering::Relaxed);
                return;
            }
        }
    };
    let hello = serde_json::to_string(&Hello::new(&rig)).unwrap_or_default();
    let mut sub = state.fanout.subscribe();
    let watching = state.tap.watch();
    log::info!("dashboard: client {peer} connected");
    let sent = tokio::time::timeout(SEND_TIMEOUT, tx.send(Message::Text(hello.into()))).await;
    let mut slow = !matches!(sent, Ok(Ok(())));
    while !slow {
        tokio::select! {
            message = sub.rx.recv() => match message {
                Some(text) => {
                    let sent = tokio::time::timeout(SEND_TIMEOUT, tx.send(Message::Text(text))).await;
                    match sent {
                        Ok(Ok(())) => {}
                        // The browser went away.
                        Ok(Err(_)) => break,
                        Err(_) => slow = true,
                    }
                }
                // Dropped from the fan-out, or the server stops.
                None => {
                    let _ = tokio::time::timeout(SEND_TIMEOUT, tx.send(Message::Close(None))).await;
                    break;
                }
            },
            incoming = rx.next() => match incoming {
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
        }
    }
    drop(watching);
    state.fanout.remove(sub.id, slow);
    let c = &sub.counts;
    log::info!(
        "dashboard: client {peer} {}: {} messages queued, {} dropped while it was behind",
        if slow { "dropped (stalled)" } else { "left" },
        c.queued.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
    state.open.fetch_sub(1, Ordering::Relaxed);
}
