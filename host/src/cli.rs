//! The command line: `brainscan serve | migrate | scan | features | model | bench | admin …`.

use clap::{Parser, Subcommand};

use crate::config::{ServeConfig, StoreConfig};

#[derive(Debug, Parser)]
#[command(
    name = "brainscan",
    version,
    about = "Self-hostable brain-response scan service"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API and in-process workers.
    Serve(Box<ServeConfig>),
    /// Create or upgrade the database schema and exit.
    Migrate {
        #[command(flatten)]
        store: StoreConfig,
    },
    /// The service's whole analysis of a file or URL on this machine (no server, no
    /// database): lens scores, moments, summary, manipulation read and benchmarks.
    Analyze(Box<crate::local::analyze::AnalyzeArgs>),
    /// Run qualia on a file or URL locally (no server, no database) and print the per-second
    /// network responses.
    Scan(crate::local::ClipArgs),
    /// Print the per-second feature matrix of a clip (CSV), for fitting and debugging.
    Features(crate::local::ClipArgs),
    /// Build, fit and inspect qualia models.
    Model {
        #[command(subcommand)]
        command: crate::local::ModelCommand,
    },
    /// Measure decode-only vs full scan time, per-stage kernel time and peak memory on a clip.
    Bench(crate::local::BenchArgs),
    /// Analysis plugins: install, list, activate, roll back, remove, and test locally.
    Plugin {
        #[command(flatten)]
        store: StoreConfig,
        #[command(flatten)]
        plugins: crate::config::PluginConfig,
        #[command(subcommand)]
        command: crate::plugins::commands::PluginCommand,
    },
    /// Print a shell completion script to stdout, e.g.
    /// `brainscan completions bash > /etc/bash_completion.d/brainscan`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout, or with `--out DIR` write one page per command
    /// (`brainscan.1`, `brainscan-scan.1`, ...).
    Man {
        /// Folder to write every command's page into.
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// An MCP server on stdin/stdout for desktop agents, proxying a running service: the
    /// same tools and resources as the service's `/mcp` endpoint, with this key.
    Mcp {
        /// The service's base URL, e.g. `http://127.0.0.1:8080`.
        #[arg(long, env = "BRAINSCAN_URL")]
        url: String,
        /// An API key of the organisation the agent works for (`sk_live_…`).
        #[arg(long, env = "BRAINSCAN_API_KEY", hide_env_values = true)]
        key: String,
    },
    /// Organisations, API keys and wallets.
    Admin {
        #[command(flatten)]
        store: StoreConfig,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Organisations.
    Org {
        #[command(subcommand)]
        command: OrgCommand,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Prepaid wallets.
    Wallet {
        #[command(subcommand)]
        command: WalletCommand,
    },
    /// Webhook deliveries.
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// People who sign in to the console, and their organisations.
    Person {
        #[command(subcommand)]
        command: PersonCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum PersonCommand {
    /// Add a person to an organisation (creating their account if it is new), or change their
    /// role there.
    Add {
        email: String,
        /// Organisation id or name.
        #[arg(long)]
        org: String,
        /// `owner` (manages the organisation's API keys) or `member`.
        #[arg(long, default_value = "member")]
        role: String,
        /// Read a password for a new account from standard input (one line). Without it the
        /// person signs in with links from `brainscan admin person link`.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a person's password from standard input (one line); ends their sessions.
    Password { email: String },
    /// Print a one-time sign-in link for a person.
    Link {
        email: String,
        /// Minutes the link stays valid (1-1440).
        #[arg(long, default_value_t = crate::people::LINK_TTL_MINUTES)]
        minutes: i64,
        /// The service's public base URL the link starts with.
        #[arg(
            long,
            env = "BRAINSCAN_PUBLIC_URL",
            default_value = "http://127.0.0.1:8080"
        )]
        base_url: String,
    },
    /// List an organisation's people and their roles.
    List {
        #[arg(long)]
        org: String,
    },
    /// Remove a person from an organisation.
    Remove {
        email: String,
        #[arg(long)]
        org: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Every delivery attempt for a scan: time, attempt, HTTP status or error.
    Deliveries {
        #[arg(long)]
        scan: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organisation; prints its id and webhook signing secret.
    Create { name: String },
    /// List organisations.
    List,
    /// Show an organisation (by id or name), its webhook secret, wallet and plan.
    Show { org: String },
    /// Set an organisation's dashboard plan: free (1 console scan a month), pro (60) or
    /// studio (150). API scans stay billed from the wallet.
    Plan { org: String, plan: String },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create an API key; the full key is printed once and never stored.
    Create {
        /// Organisation id or name.
        #[arg(long)]
        org: String,
    },
    /// List an organisation's keys (ids only).
    List {
        #[arg(long)]
        org: String,
    },
    /// Revoke a key by its id (`key_…`) or the full key.
    Revoke { key: String },
}

#[derive(Debug, Subcommand)]
pub enum WalletCommand {
    /// Add a prepaid deposit, e.g. `--usd 20.00`.
    Credit {
        #[arg(long)]
        org: String,
        #[arg(long)]
        usd: String,
    },
    /// Show the wallet.
    Show {
        #[arg(long)]
        org: String,
    },
}
