//! The `moments` binary: `moments serve` (the default) runs the service.

use moments::config::Settings;
use moments::startup::Application;

const USAGE: &str = "usage: moments [serve]

Runs the moments service. Configuration comes from MOMENTS_* environment
variables (see README.md); RUST_LOG sets the log filter.";

/// Pins glibc's mmap threshold at its default 128 KiB. Left dynamic, glibc
/// raises it to the size of the largest block freed, so every 19 MiB argon2
/// buffer after the first is carved from the heap, fragments it, and is never
/// returned: measured, 30 registrations left the process at 280 MiB instead
/// of 12 MiB.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets an allocator parameter; it is called once,
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

fn main() -> std::process::ExitCode {
    tune_allocator();
    actix_web::rt::System::new().block_on(serve())
}

async fn serve() -> std::process::ExitCode {
    moments::telemetry::init("info,moments=info");
    let command = std::env::args().nth(1);
    match command.as_deref() {
        None | Some("serve") => {}
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("unknown command {other:?}\n\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    }
    let result = async {
        let settings = Settings::from_env()?;
        let app = Application::build(settings).await?;
        app.run_until_stopped().await?;
        anyhow::Ok(())
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("moments: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
