//! Crash safety of atomic writes: a child process rewrites a file in a loop, through
//! MODIFY and through the history layer's `write_bytes`, and is killed with SIGKILL at random
//! moments, at least 200 times. After every kill the file holds the complete old or the complete
//! new content with its permission bits intact, and the next `Workspace::open` leaves no
//! temporary file behind.
//!
//! The child is this test binary itself, re-run with an environment variable naming the
//! directory (see `crash_child`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pai::workspace::{Modification, Workspace, WorkspaceConfig};

const CHILD_ENV: &str = "PAI_WORKSPACE_CRASH_CHILD";
const KILLS: usize = 200;
const MODE: u32 = 0o640;

fn content_a() -> String {
    "alpha line of the old content\n".repeat(2_000)
}

fn content_b() -> String {
    "BETA LINE OF THE NEW CONTENT, A DIFFERENT LENGTH\n".repeat(1_500)
}

/// The child's work. Does nothing in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let cfg = WorkspaceConfig {
        // Every rewrite replaces the whole file; the guard is not what is under test here.
        modify_threshold: usize::MAX,
        ..WorkspaceConfig::default()
    };
    let dir = Path::new(&dir);
    let ws = Workspace::open(&dir.join("proj"), cfg).unwrap();
    let (a, b) = (content_a(), content_b());
    for i in 0u64.. {
        if i == 1 {
            // Tell the parent the rewrite loop is running, so its kill lands inside it.
            fs::write(dir.join("ready"), "").unwrap();
        }
        let next = if i % 2 == 0 { &b } else { &a };
        if i % 4 < 2 {
            ws.modify("data.txt", &Modification::Content(next.clone()))
                .unwrap();
        } else {
            ws.write_bytes("data.txt", next.as_bytes(), None).unwrap();
        }
    }
}

/// A small xorshift generator; the seed is printed so a failing run can be told apart.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn temps(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".pai-tmp-"))
        .count()
}

#[test]
fn sigkill_during_rewrites_leaves_old_or_new_content() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = &tmp.path().join("proj");
    let ready = tmp.path().join("ready");
    fs::create_dir(dir).unwrap();
    let data = dir.join("data.txt");
    let (a, b) = (content_a(), content_b());
    fs::write(&data, &a).unwrap();
    fs::set_permissions(&data, fs::Permissions::from_mode(MODE)).unwrap();
    let exe = std::env::current_exe().unwrap();
    // Test names are paths below the binary's crate: `workspace_crash::crash_child`.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let child_test = format!("{module}::crash_child");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Rng(seed);
    let (mut saw_a, mut saw_b, mut left_temp) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for kill in 0..KILLS {
        let mut child = Command::new(&exe)
            .args([&child_test, "--exact", "--test-threads=1", "--nocapture"])
            .env(CHILD_ENV, tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let waiting = Instant::now();
        while !ready.exists() {
            assert!(
                waiting.elapsed() < Duration::from_secs(10),
                "child never started"
            );
            std::thread::sleep(Duration::from_micros(500));
        }
        // Then a random moment within the next few rewrites.
        std::thread::sleep(Duration::from_micros(rng.next() % 25_000));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        fs::remove_file(&ready).unwrap();

        let now = fs::read(&data).unwrap();
        if now == a.as_bytes() {
            saw_a += 1;
        } else if now == b.as_bytes() {
            saw_b += 1;
        } else {
            panic!(
                "kill {kill} (seed {seed}): data.txt holds {} bytes that are neither the old nor \
                 the new content",
                now.len()
            );
        }
        let mode = fs::metadata(&data).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, MODE, "kill {kill}: mode changed to {mode:o}");
        let before = temps(dir);
        if before > 0 {
            left_temp += 1;
        }
        let ws = Workspace::open(dir, WorkspaceConfig::default()).unwrap();
        assert_eq!(ws.stale_temps_removed(), before, "kill {kill}");
        assert_eq!(temps(dir), 0, "kill {kill}: temporary file left after open");
    }
    eprintln!(
        "{KILLS} kills in {:.1}s (seed {seed}): old content {saw_a}, new content {saw_b}, \
         {left_temp} kills interrupted a write and left a temporary that open removed",
        started.elapsed().as_secs_f64()
    );
    // The kills really landed while the child was rewriting.
    assert!(saw_a > 0 && saw_b > 0, "old {saw_a}, new {saw_b}");
    assert!(
        left_temp > 0,
        "no kill interrupted a write; the test proved nothing"
    );
}
