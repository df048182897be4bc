//! Python's urllib, a real client that finds the proxy through `HTTP_PROXY`.

use std::process::Command;

use crate::support::{TestProxy, http_server};

/// Runs `script` with python3 pointed at the proxy; `None` when python3 is not installed.
fn python(proxy: &TestProxy, script: &str) -> Option<std::process::Output> {
    let url = format!("http://{}", proxy.address);
    Command::new("python3")
        .args(["-c", script])
        .env_clear()
        .env("HTTP_PROXY", &url)
        .env("http_proxy", &url)
        .output()
        .ok()
}

#[test]
fn python_urllib_fetches_an_allowed_url_and_is_refused_another() {
    let (server, requests) = http_server("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nfrom host");
    let proxy = TestProxy::allowing_local("allowed.test");
    let script = format!(
        r#"
import urllib.request, urllib.error
print(urllib.request.urlopen("http://allowed.test:{port}/index").read().decode())
try:
    urllib.request.urlopen("http://refused.test:{port}/")
except urllib.error.HTTPError as error:
    print(error.code, error.headers["X-Burrow-Denied"], error.read().decode().strip())
"#,
        port = server.port()
    );
    let Some(output) = python(&proxy, &script) else {
        eprintln!("python3 is not installed: skipped");
        return;
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let port = server.port();
    assert_eq!(
        stdout,
        format!(
            "from host\n403 refused.test:{port} burrow: refused.test:{port} is not on this \
             sandbox's network allowlist (allowed: allowed.test)\n"
        )
    );
    let forwarded = String::from_utf8(requests.recv().unwrap()).unwrap();
    assert!(
        forwarded.starts_with("GET /index HTTP/1.1\r\n"),
        "{forwarded}"
    );
    assert_eq!(proxy.denials.all().len(), 1);
}
