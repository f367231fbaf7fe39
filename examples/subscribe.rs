//! Reads what `hailo-edge run --publish zenoh` publishes: bodies, views and skeletons,
//! one line each; a payload that is not one is counted and skipped with a log line
//! naming its key ([`hailo_edge::publish::zenoh::read`]).
//!
//! ```sh
//! hailo-edge run --publish zenoh:tcp/0.0.0.0:7447 --publish-as box1   # on the box
//! cargo run --release --example subscribe -- tcp/BOX:7447 10          # anywhere: 10 s
//! cargo run --release --example subscribe                             # peers by scouting
//! ```

use hailo_edge::publish::zenoh::{open_session, read, Endpoint, Message, PREFIX};

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let mut args = std::env::args().skip(1);
    let endpoint = args.next();
    let seconds: f64 = match args.next() {
        Some(s) => s
            .parse()
            .map_err(|_| anyhow::anyhow!("`{s}` is not a number of seconds"))?,
        None => f64::INFINITY,
    };
    let session = open_session(
        endpoint
            .as_deref()
            .map_or(Endpoint::Default, Endpoint::Connect),
        endpoint.is_none(),
    )?;
    let tally = read(
        &session,
        &format!("{PREFIX}/**"),
        seconds,
        |key, m| match m {
            Message::Body(b) => println!(
                "{key} body at {} ns: {} keypoints, residual {} mm",
                b.capture_ns,
                b.keypoints_3d.len(),
                b.residual_mm.map_or("-".into(), |r| format!("{r:.1}"))
            ),
            Message::View(v) => println!(
                "{key} view of camera {} at {} ns: {} keypoints",
                v.camera,
                v.capture_ns,
                v.keypoints.len()
            ),
            Message::Skeleton(s) => println!("{key} skeleton of {}", s.rig),
        },
    )?;
    println!(
        "bodies {} views {} skeletons {} malformed {}",
        tally.bodies, tally.views, tally.skeletons, tally.malformed
    );
    Ok(())
}
