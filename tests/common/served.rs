//! The address a `brainscan serve` child prints as its first stdout line, shared by the
//! tests and benches that start real server processes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Reads the child's first stdout line (`… listening on http://ADDR`) and returns the base
/// URL. Panics with the line when the process did not start listening on loopback.
pub fn listening_base(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("the child's stdout is piped"))
        .read_line(&mut line)
        .expect("read the first line");
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        base.starts_with("http://127.0.0.1:"),
        "brainscan serve did not start: {line:?}"
    );
    base
}

/// A child process stopped when dropped: SIGTERM first (nginx's master then stops its
/// workers; SIGKILL would orphan them), SIGKILL if it is still there after two seconds.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..20 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// `brainscan ARGS` on the data folder `data` (SQLite there, warnings only).
pub fn brainscan(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_brainscan"));
    std::fs::create_dir_all(data).expect("data dir");
    c.args(args)
        .env_remove("BRAINSCAN_DATABASE_URL")
        .env("BRAINSCAN_DATA_DIR", data)
        .env("BRAINSCAN_LOG", "warn");
    c
}

/// A `brainscan` command that must succeed; its trimmed stdout.
pub fn cli(data: &Path, args: &[&str]) -> String {
    let out = brainscan(data, args).output().expect("cli");
    assert!(
        out.status.success(),
        "brainscan {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_owned()
}

/// An organisation `bench` with $100 and a key, in `data`; returns the key.
pub fn funded_key(data: &Path) -> String {
    cli(data, &["migrate"]);
    cli(data, &["admin", "org", "create", "bench"]);
    cli(
        data,
        &[
            "admin", "wallet", "credit", "--org", "bench", "--usd", "100",
        ],
    );
    cli(data, &["admin", "key", "create", "--org", "bench"])
}

/// Waits until `url` answers at all (60 s at most).
pub async fn wait_for(http: &reqwest::Client, url: &str) {
    for _ in 0..600 {
        if http.get(url).send().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} never answered");
}

/// Discards `child`'s stdout after its first line, so a chatty process cannot block on a full
/// pipe (used after [`listening_base`] has read the address).
pub fn spawn_serve(mut command: Command) -> (Proc, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn brainscan");
    let base = listening_base(&mut child);
    (Proc(child), base)
}
