//! Scale-out mode: the queue on both engines, several real `brainscan` processes on one
//! PostgreSQL database, and the artifact stores (local folder and S3-compatible).

/// Runs each named `async fn(Db)` of the module as two tests, `sqlite::NAME` and
/// `postgres::NAME`; the module provides `open_sqlite` and `open_postgres`.
macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let (db, _guard) = super::open_sqlite().await;
                    super::$name(db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let (db, _guard) = super::open_postgres().await;
                    super::$name(db).await;
                }
            )*
        }
    };
}

mod people;
mod pg;
mod processes;
mod queue;
mod recall;
mod s3;

/// The e2e suite's fixtures: generated media and the loopback media server.
#[path = "../e2e/support.rs"]
mod support;
