//! The `moments` binary: `moments serve` (the default) runs the service.

use moments::config::Settings;
use moments::startup::Application;

const USAGE: &str = "usage: moments [serve]

Runs the moments service. Configuration comes from MOMENTS_* environment
variables (see README.md); RUST_LOG sets the log filter.";

#[actix_web::main]
async fn main() -> std::process::ExitCode {
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
