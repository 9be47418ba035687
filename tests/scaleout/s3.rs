//! The artifact store on S3-compatible storage: moto's S3 server on a loopback port (see
//! scripts/test-services for why moto), a real `brainscan` process pointed at a bucket.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::processes::{Cluster, ready, submit, tone, wait_complete};
use crate::support::media_server;

/// moto's S3 server, killed on drop.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn moto() -> Moto {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let bin = std::env::var("BRAINSCAN_MOTO_SERVER").unwrap_or_else(|_| "moto_server".into());
    let child = Command::new(&bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{bin}: {e} (scripts/test-services installs moto and sets BRAINSCAN_MOTO_SERVER)"
            )
        });
    let m = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("moto did not start on port {port}");
}

fn query_param<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    url.split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renders_go_to_the_bucket_and_the_url_is_a_one_hour_presigned_get() {
    let s3 = moto().await;
    let http = reqwest::Client::new();
    let bucket = "brainscan-artifacts";
    let made = http
        .put(format!("{}/{bucket}", s3.endpoint))
        .send()
        .await
        .expect("create bucket");
    assert!(made.status().is_success(), "{:?}", made.text().await);

    let mut cluster = Cluster::new().await;
    cluster.env = [
        ("BRAINSCAN_ARTIFACTS_URL", format!("s3://{bucket}/renders")),
        ("AWS_ENDPOINT_URL", s3.endpoint.clone()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "brainscan-test".into()),
        ("AWS_SECRET_ACCESS_KEY", "brainscan-test-secret".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let key = cluster.org("acme");
    let media = media_server().await;
    let node = cluster.serve("all", "all", &[]);
    ready(&http, &node).await;

    let mut body = tone(&media);
    body["options"] = serde_json::json!({"include_fmri": true});
    let (status, created) = submit(&http, &node, &key, &body).await;
    assert_eq!(status, 202, "{created}");
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let db = cluster.db().await;
    wait_complete(&db, std::slice::from_ref(&id), Duration::from_secs(120)).await;
    let scan: serde_json::Value = http
        .get(format!("{}/api/v1/scans/{id}", node.base))
        .bearer_auth(&key)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    let url = scan["fmri_url"].as_str().expect("fmri_url").to_owned();

    // A SigV4 presigned GET straight to the bucket, valid for exactly one hour from now.
    assert!(
        url.starts_with(&format!(
            "{}/{bucket}/renders/scans/{id}/fmri.mp4?",
            s3.endpoint
        )),
        "{url}"
    );
    assert_eq!(
        query_param(&url, "X-Amz-Algorithm"),
        Some("AWS4-HMAC-SHA256")
    );
    assert_eq!(query_param(&url, "X-Amz-Expires"), Some("3600"));
    let signed_at = query_param(&url, "X-Amz-Date").expect("date");
    let signed_at = chrono::NaiveDateTime::parse_from_str(signed_at, "%Y%m%dT%H%M%SZ")
        .expect("amz date")
        .and_utc();
    assert!((chrono::Utc::now() - signed_at).num_seconds().abs() < 120);
    let signature = query_param(&url, "X-Amz-Signature").expect("signature");
    assert_eq!(signature.len(), 64);
    assert!(
        query_param(&url, "X-Amz-Credential").is_some_and(|c| c.starts_with("brainscan-test%2F"))
    );

    // The objects are really in the bucket: the cortex video (an MP4: its first box is
    // `ftyp`) and its poster PNG, presigned the same way.
    let r = http.get(&url).send().await.expect("fetch");
    assert!(r.status().is_success());
    let bytes = r.bytes().await.expect("bytes");
    assert_eq!(&bytes[4..8], b"ftyp", "not an MP4");
    let poster = scan["fmri_poster_url"].as_str().expect("fmri_poster_url");
    assert!(
        poster.starts_with(&format!(
            "{}/{bucket}/renders/scans/{id}/fmri-poster.png?",
            s3.endpoint
        )),
        "{poster}"
    );
    let bytes = http
        .get(poster)
        .send()
        .await
        .expect("poster")
        .bytes()
        .await
        .expect("bytes");
    let reader = png::Decoder::new(std::io::Cursor::new(bytes.to_vec()))
        .read_info()
        .expect("png");
    assert_eq!(reader.info().height, brainscan::render::video::HEIGHT);
    // Nothing was written to a local folder instead.
    assert!(!cluster.dir.path().join("artifacts/scans").exists());
}
