//! A fresh PostgreSQL database per test on the machine's server (127.0.0.1:5432, trust auth),
//! dropped when the guard goes out of scope.

use sqlx::{Connection, PgConnection};

/// Where the test server is; `BRAINSCAN_TEST_POSTGRES_URL` overrides it.
pub fn server_url() -> String {
    std::env::var("BRAINSCAN_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// `server_url` with its database name replaced.
fn with_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("postgres url");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

/// An empty database that lives as long as this value.
pub struct FreshPg {
    pub url: String,
    name: String,
}

impl FreshPg {
    pub async fn new() -> Self {
        let name = format!(
            "brainscan_test_{}",
            brainscan::ids::token(12).to_ascii_lowercase()
        );
        let mut conn = PgConnection::connect(&server_url())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "PostgreSQL must run at {} (trust auth) for the scale-out tests: {e}",
                    server_url()
                )
            });
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create database");
        Self {
            url: with_database(&server_url(), &name),
            name,
        }
    }
}

impl Drop for FreshPg {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop may run inside a runtime: use a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&server_url()).await {
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&mut conn)
                    .await;
                }
            });
        })
        .join();
    }
}
